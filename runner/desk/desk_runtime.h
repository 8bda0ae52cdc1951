#pragma once
// DeskRuntime: one desk — its queue of triggers and the loop that works through them, one
// at a time (the seed's trading_agent.runtime.desk_runtime).
//
// A user message that arrives while a turn runs is steering: it waits in the steering
// inbox for the turn's next tool round. /stop skips the queue and cancels the running turn;
// read-only commands (/status, /usage, /help, /skills, /agents, /journal, /tools, /approvals) and /btw
// are answered beside it.
// Every message to the model starts with a line giving the India time and what woke the
// desk. Replies travel as events (COMMAND_ANSWERED, TURN_FINISHED, ...).

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>

#include <chrono>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/clock.h"
#include "base/result.h"
#include "runner/desk/steering_inbox.h"
#include "runner/desk/turn_runner.h"
#include "runner/events/event_bus.h"
#include "runner/events/trigger.h"

namespace deskd::tools {
class ToolRegistry;
}

namespace deskd::desk {

class BudgetKeeper;
class Journal;
class MarketStatus;
struct DeskCore;
class SessionKeeper;
class SkillLibrary;
class SubagentBoard;
class UsageTracker;

/// Whether a desk is stopped, reading its journal at start, waiting for a trigger or
/// running a turn. A starting desk takes triggers; it handles them once its journal's
/// unfinished ones are back in the queue.
enum class DeskState { stopped, starting, idle, running };
std::string_view desk_state_name(DeskState state);

/// The desk's settings.
struct DeskSettings {
  std::string name;
  std::string mode = "dry_run";  ///< "dry_run" or "live", reported by /status
  /// A turn with no model output and no tool event for this long is ended as stalled.
  std::chrono::milliseconds stall_timeout = std::chrono::minutes(5);
  /// The sandbox's network as /status reports it ("none (loopback only)", "allowlist ...");
  /// empty: not reported.
  std::string network = {};
};

/// The optional parts a desk may have; every pointer may be null.
struct DeskParts {
  std::shared_ptr<tools::ToolRegistry> tool_registry;  ///< closed when the desk stops
  SessionKeeper* session_keeper = nullptr;
  const SkillLibrary* skill_library = nullptr;
  UsageTracker* usage_tracker = nullptr;
  /// The desk's spend caps: a trigger that comes at a daily cap is answered at once with
  /// BUDGET_REACHED, a turn whose call was refused ends with it, and the context line says
  /// what is left. Its calls are reserved by the turn runner, which holds it too.
  BudgetKeeper* budget = nullptr;
  const MarketStatus* market_status = nullptr;
  Journal* journal = nullptr;
  /// The desk's subagents, for /agents; the desk attaches its publish to it while it runs.
  SubagentBoard* subagents = nullptr;
  /// The text of /tools: each tool and what it may touch (tools::describe_tool_reach).
  std::string tools_text;
  /// The text of /approvals: the desk's API calls waiting for a person (the assembly reads
  /// them from the desk's egress::ApprovalBoard, which the desk does not know). Called on the
  /// desk's executor; must be thread-safe. Empty for a desk without an API gate.
  std::function<std::string()> approvals_text;
};

/// One entry of the command menu.
struct CommandEntry {
  std::string name;         ///< "/status"
  std::string description;  ///< starts with its usage when it takes arguments
};

class DeskRuntime {
 public:
  /// Creates the desk without starting its loop. All members run on `executor`, which
  /// must not run handlers concurrently (an io_context on one thread, or a strand).
  DeskRuntime(boost::asio::any_io_executor executor, DeskSettings settings, EventBus& bus,
              std::shared_ptr<TurnRunner> turn_runner, const Clock& clock, DeskParts parts = {});
  ~DeskRuntime();

  const std::string& name() const;
  DeskState state() const;
  bool paused() const;
  TurnRunner& turn_runner();
  UsageTracker* usage_tracker();

  /// Adds a trigger (journaled first, so once this returns nothing is lost). Safe from any
  /// thread. A /stop is answered at once, read-only commands beside the running turn, and a
  /// user message during a turn goes to the steering inbox. Refuses a trigger addressed to
  /// another desk: "Trigger for desk 'a' was sent to desk 'b'".
  Result<void> submit(Trigger trigger);

  /// What submit(trigger, acknowledged) calls once the trigger is the desk's, or with why not.
  using Acknowledgement = std::function<void(Result<void>)>;

  /// Adds a trigger as submit(trigger) does, without waiting for the disk: `acknowledged`
  /// is called on the desk's executor once the trigger's line is journaled and flushed
  /// (the desk takes the trigger at that moment, not before), or with why it was refused.
  /// Triggers submitted together share one fsync. Safe from any thread.
  void submit(Trigger trigger, Acknowledgement acknowledged);

  /// The desk's commands and usable skills, for a client's command menu.
  std::vector<CommandEntry> command_catalogue() const;

  /// How many triggers wait to be handled.
  std::size_t queued_count() const;

  /// Starts no further trigger: the running turn (if any) goes on to its end, and the
  /// queue waits — it is in the journal, and runs when the desk starts again. For a clean
  /// stop: drain, give the running turn its grace, then cancel run().
  void drain();

  /// Returns once no turn runs (at once when none does): the grace of a clean stop, waited
  /// for without polling. Cancelling the waiting coroutine ends the wait.
  boost::asio::awaitable<void> until_no_turn();

  /// Handles triggers one at a time until cancelled; first reads the journal (off the event
  /// loop, the desk "starting" meanwhile): reports its damaged lines, finishes triggers
  /// whose turn ended and re-delivers the others (TRIGGER_REDELIVERED, with why), ahead of
  /// what arrived meanwhile. Then closes the turn runner and the tools, and reports
  /// DESK_STOPPED.
  boost::asio::awaitable<void> run();

  /// Ends the session with a summary and starts a fresh one, for /rollover.
  boost::asio::awaitable<std::string> roll_over();

 private:
  std::shared_ptr<DeskCore> core_;
};

}  // namespace deskd::desk
