#pragma once
// BashSession: one long-lived bash inside the desk's sandbox, like a terminal that stays
// open (the seed's trading_agent.tools.bash_session). The folder, variables, functions and
// aliases a command sets carry over to the next; each command reads /dev/null; a command
// that runs too long restarts the whole session.
//
// Commands are handed to a small loop inside bash one at a time, and the end of each is
// reported on a separate pipe with a fresh random id and the exit status — never through
// the command's own output, which stays exactly what the command printed. A terminal left
// idle may be closed (close_when_idle) to free the host's memory.

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "sandbox/sandbox_spec.h"

namespace deskd::tools {

/// What one command produced.
struct CommandOutcome {
  std::string output;              ///< stdout and stderr together, cut to the maximum length
  std::optional<int> exit_status;  ///< empty when it was stopped for running too long
  bool truncated = false;          ///< output was left out because it was too long
  /// Why the terminal's sandbox could not start (the step that failed, and why); empty when
  /// it started. No command can run then: the desk is broken, not the command.
  std::string start_failure;
};

/// A background job just started: its id for check_background, and how starting it went.
struct BackgroundStart {
  std::string job_id;
  CommandOutcome start;
};

class BashSession {
 public:
  /// Creates the session without starting bash. `spec` is the desk's sandbox.
  BashSession(boost::asio::any_io_executor executor, sandbox::SandboxSpec spec, double timeout_seconds,
              std::size_t maximum_output_characters);
  ~BashSession();
  BashSession(const BashSession&) = delete;
  BashSession& operator=(const BashSession&) = delete;

  /// Runs one command and waits for it to finish. Calls made in parallel run one after
  /// another, in order. Never throws: a sandbox that cannot start is an outcome saying why.
  boost::asio::awaitable<CommandOutcome> run(std::string command);

  /// Starts a long command detached, its output in a log under scratch/; returns its id.
  boost::asio::awaitable<BackgroundStart> run_in_background(std::string command);

  /// "running" or "finished", then the last 4,000 characters of the job's log; an unknown
  /// or malformed id gives "no such job: <id>".
  boost::asio::awaitable<CommandOutcome> check_background(std::string job_id);

  /// Stops bash (and everything in its sandbox); the next command gets a fresh terminal,
  /// which the session starts at once in the background so that the command need not wait
  /// for it (so does a timeout, a limit met or a bash that died).
  boost::asio::awaitable<void> restart();

  /// Starts the terminal now, in the background, if none is running or starting, so that
  /// the next command need not wait for it; a start that fails is left to that command,
  /// which says why. Nothing once closed.
  void prepare();

  /// Closes the terminal once nothing used it for `idle` (no command, no background job
  /// left running); the next command starts a fresh one and is told so. `companion`, when
  /// given, is asked then too: it closes what else the desk keeps (its file opener) if that
  /// was not used for `idle`, and returns when it was last used if it still runs (it is asked
  /// again `idle` after that).
  /// Zero: never (the default).
  using IdleCompanion =
      std::function<std::optional<std::chrono::steady_clock::time_point>(std::chrono::milliseconds idle)>;
  void close_when_idle(std::chrono::milliseconds idle, IdleCompanion companion = {});

  /// Stops bash for good; later calls return a "closed" outcome.
  boost::asio::awaitable<void> close();

  double timeout_seconds() const;
  /// Whether commands reach the host's network, not only the sandbox's own loopback.
  bool reaches_network() const;

 private:
  struct State;
  std::shared_ptr<State> state_;
};

}  // namespace deskd::tools
