#pragma once
// Internal to runner/desk: the shared state of one DeskRuntime, and the command handling
// that slash_commands.cpp implements on it. Not for use outside desk_runtime.cpp and
// slash_commands.cpp.

#include <boost/asio.hpp>
#include <boost/asio/thread_pool.hpp>

#include <deque>
#include <functional>
#include <memory>
#include <optional>

#include "base/task_group.h"
#include "runner/desk/desk_runtime.h"

namespace deskd::desk {

struct DeskCore : std::enable_shared_from_this<DeskCore> {
  DeskCore(boost::asio::any_io_executor executor_in, DeskSettings settings_in, EventBus& bus_in,
       std::shared_ptr<TurnRunner> runner_in, const Clock& clock_in, DeskParts parts_in);

  boost::asio::any_io_executor executor;
  DeskSettings settings;
  EventBus& bus;
  std::shared_ptr<TurnRunner> runner;
  const Clock& clock;
  DeskParts parts;
  SteeringInbox inbox;

  // Blocking journal work (reading it at start, compacting it) runs here, off the loop;
  // null for a desk without a journal. Joined when the DeskRuntime goes.
  std::unique_ptr<boost::asio::thread_pool> worker;
  bool recovering = false;       // the journal is being read at start
  bool compacting = false;       // a compaction runs on the worker
  bool journal_failing = false;  // the last line the journal was given was refused

  DeskState state = DeskState::stopped;
  bool paused = false;
  // A /pause or /resume sent to this run of the desk was handled: it is newer than any the
  // journal holds, so recovery leaves `paused` as it set it.
  bool pause_set_since_start = false;
  bool draining = false;  // start no further trigger: deskd is stopping
  std::deque<Trigger> queue;
  std::atomic<std::size_t> queued{0};
  boost::asio::steady_timer wake;  // cancelled when something is queued

  // The running turn.
  std::optional<Trigger> running_trigger;
  std::chrono::system_clock::time_point running_since{};
  std::shared_ptr<boost::asio::cancellation_signal> turn_stop;
  bool stop_requested = false;
  std::vector<Trigger> delivered_steering;
  // The running turn's stall watch: a subagent's event is progress of the turn too.
  std::function<void()> turn_progress;
  // Answers beside the turn (/btw, /journal): cancelled and awaited as a group when the desk stops.
  TaskGroup beside;
  // Cancelled whenever a turn ends (it never expires): what waits for the running turn.
  boost::asio::steady_timer turn_ended;

  /// Lends the desk's publish to its subagents (parts.subagents) while it runs.
  void attach_subagents();
  /// Publishes and journals an event (a refused line is reported: JOURNAL_WRITE_FAILED).
  Event publish(const std::string& kind, boost::json::object data = {});
  void journal_refused(const Event& event, const Error& error);
  /// Publishes and journals an event as publish() does, and calls `then` on the executor
  /// once its line is on disk, or with why it is not (at once without a journal): for what
  /// must hold across a crash before the desk says it was done (/pause, /resume).
  using Flushed = std::function<void(DeskCore&, Result<void>)>;
  void publish_flushed(const std::string& kind, boost::json::object data, Flushed then);
  void enqueue(Trigger trigger, bool at_front = false);
  void finish(const Trigger& trigger);
  void accept(Trigger trigger);
  void answer(const Trigger& trigger, const std::string& command, std::string reply);
  std::string context_line(const Trigger& trigger) const;

  /// At start: reads the journal on the worker, reports its damaged lines, finishes the
  /// triggers whose turn ended and re-delivers the others (desk_recovery.cpp).
  boost::asio::awaitable<void> recover_journal();
  /// Hands a trigger read back from the journal to the desk as what it was.
  void redeliver(Trigger trigger);
  /// Compacts the journal on the worker if it has grown past its limit.
  void compact_journal_if_due();

  boost::asio::awaitable<void> handle(Trigger trigger);
  boost::asio::awaitable<std::string> roll_over();
  boost::asio::awaitable<void> run_turn(const Trigger& trigger, std::string message);
};

/// Handles a trigger whose text starts with '/': answers it now (beside a running turn)
/// or queues it. Implemented in slash_commands.cpp.
void handle_command(DeskCore& core, Trigger trigger);

/// Runs a queued command (/rollover, a skill) when its turn in the queue comes; false when
/// the trigger is not one.
boost::asio::awaitable<bool> run_queued_command(DeskCore& core, const Trigger& trigger);

/// The command menu.
std::vector<CommandEntry> catalogue(const DeskCore& core);

/// Answers `trigger` with what `work` returns, beside the running turn; cancelled (and
/// waited for) when the desk stops. A failure is answered as `failure_prefix` + why.
void answer_beside(DeskCore& core, const Trigger& trigger, std::string command,
                   boost::asio::awaitable<std::string> work, std::string failure_prefix);

/// The commands that read the desk's parts (part_commands.cpp): /agents, /tools,
/// /approvals, and /journal [N] [KIND], which reads the journal off the event loop.
std::string agents_text(const DeskCore& core);
std::string tools_text(const DeskCore& core);
std::string approvals_text(const DeskCore& core);
void answer_journal(DeskCore& core, const Trigger& trigger, const std::string& arguments);

}  // namespace deskd::desk
