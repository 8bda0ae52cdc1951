#pragma once
// The state a BashSession shares with its coroutines, and the constants its two source
// files (bash_session.cpp: commands; bash_session_terminal.cpp: starting and stopping
// the sandboxed bash; bash_session_idle.cpp: closing an idle one) use. Included only by them.

#include <boost/asio.hpp>

#include <cstddef>
#include <chrono>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "base/result.h"
#include "runner/tools/bash_session.h"
#include "runner/tools/output_collector.h"
#include "sandbox/launcher.h"

namespace deskd::tools {

namespace bash_session_detail {

inline constexpr auto kAwait = boost::asio::as_tuple(boost::asio::use_awaitable);
// A flood is read in large pieces into one buffer the session keeps: fewer wake-ups and
// system calls per byte, and no memory that grows with the flood.
inline constexpr std::size_t kOutputReadBytes = std::size_t{256} << 10;
// The output pipe's capacity (the kernel's default is 64 KiB): a fast writer fills it
// while deskd is busy elsewhere instead of stopping every 64 KiB. Best effort: a user past
// the kernel's pipe-user-pages-soft gets the default.
inline constexpr int kOutputPipeBytes = 1 << 20;
// How long a sandbox may take to set itself up before its start is given up.
inline constexpr int kSetUpSeconds = 30;

}  // namespace bash_session_detail

// Everything of a session lives here, shared with the coroutines that use it, so that a
// coroutine still suspended when the BashSession goes away finds valid memory.
struct BashSession::State : std::enable_shared_from_this<BashSession::State> {
  State(boost::asio::any_io_executor executor_in, sandbox::SandboxSpec spec_in, double timeout, std::size_t maximum)
      : executor(std::move(executor_in)),
        spec(std::move(spec_in)),
        timeout_seconds(timeout),
        collector(maximum),
        deadline_timer(executor) {}

  boost::asio::any_io_executor executor;
  sandbox::SandboxSpec spec;
  double timeout_seconds;
  OutputCollector collector;
  bool closed = false;

  std::optional<sandbox::SandboxedProcess> process;
  // A terminal whose sandbox is still setting itself up: stop() drops it, which kills it.
  std::optional<sandbox::StartingSandbox> starting;
  std::optional<boost::asio::posix::stream_descriptor> input;    // -> bash's fd 0: the commands
  std::optional<boost::asio::posix::stream_descriptor> output;   // <- bash's fds 1 and 2
  std::optional<boost::asio::posix::stream_descriptor> reports;  // <- bash's fd 3 (13 in the loop): "<id> <status>"
  std::string report_buffer;
  bool output_ended = false;
  std::unique_ptr<char[]> output_buffer;  // kOutputReadBytes, allocated at the first start

  // A first-come, first-served lock: parallel calls run one after another, in order.
  struct Waiter {
    explicit Waiter(const boost::asio::any_io_executor& executor)
        : turn(executor, boost::asio::steady_timer::time_point::max()) {}
    boost::asio::steady_timer turn;
    bool granted = false;  // set by unlock(); a wake-up without it is a cancellation
  };
  bool busy = false;
  std::deque<std::shared_ptr<Waiter>> waiting;

  boost::asio::awaitable<void> lock();
  void unlock();
  boost::asio::awaitable<Result<void>> start();
  void stop();
  // Starts the next terminal in the background once this one has stopped, so that the
  // next command finds it ready: a restart, a timeout or a limit met costs the desk no
  // wait for a new sandbox. Only one at a time, never after a failed start (which would
  // fail again) nor once the session is closed.
  static void prepare_next(const std::shared_ptr<State>& self);
  bool preparing = false;
  bool last_start_failed = false;
  bool drain_output();
  enum class Report { none, finished, ended };
  Report read_reports(const std::string& id, int& status);
  boost::asio::awaitable<CommandOutcome> run_locked(const std::string& command);

  // What a running command waits for (bash_session_wait.cpp), without a coroutine per
  // source: the output or the reports readable, the init ended, the deadline passed, or
  // the caller cancelled. One wait at a time.
  enum class Woken { output, reports, deadline, exited, cancelled };
  boost::asio::awaitable<Woken> wait_for_event(bool watch_output);
  struct PendingWait;
  std::shared_ptr<PendingWait> pending_wait;
  void start_wait(std::shared_ptr<PendingWait> wait, bool watch_output);
  void finish_wait(Woken woken);
  // The running command's deadline: a wait still pending when it passes ends as Woken::deadline.
  std::chrono::steady_clock::time_point command_deadline{};
  boost::asio::steady_timer deadline_timer;
  void begin_deadline();
  void end_deadline();
  boost::asio::awaitable<CommandOutcome> finish_after_death();
  std::string limits_note(std::string_view output = {});
  // Tells the desk's refusal reporter about the limits met (REFUSED, enforcer "limit").
  void report_limits(const sandbox::LimitHits& hits);

  // The sandbox's limit counters when this terminal started (zero: a new cgroup), and
  // where they stood when it was stopped.
  sandbox::LimitHits ended_hits{};

  // Closing a terminal nobody used for `idle_limit` (bash_session_idle.cpp); zero: never.
  std::chrono::milliseconds idle_limit{0};
  // Closes the desk's file opener when it too was not used for idle_limit; returns when one
  // still running was last used (the watch looks again idle_limit after). Empty: none.
  BashSession::IdleCompanion idle_companion;
  std::chrono::steady_clock::time_point last_used{};
  std::optional<boost::asio::steady_timer> idle_timer;  // armed while a watch runs
  // The terminal was closed for idleness: the next command is told it runs in a fresh one.
  bool closed_for_idle = false;
  // Notes the end of a use (a command, a prepared start) and starts the watch if none runs.
  static void watch_idle(const std::shared_ptr<State>& self);
  // The watch: returns once nothing of the session is left open, or the session closed.
  static boost::asio::awaitable<void> watch_until_idle_closed(std::shared_ptr<State> self);
  // What the first command after an idle closing is told; "" otherwise.
  std::string idle_note();
};

}  // namespace deskd::tools
