#include "runner/desk/desk_runtime.h"

#include <boost/asio.hpp>
#include <boost/json.hpp>

#include "base/asio_await.h"
#include "base/exception_text.h"
#include <future>

#include "runner/desk/budget_keeper.h"
#include "runner/desk/desk_core.h"
#include "runner/desk/market_status.h"
#include "runner/desk/session_keeper.h"
#include "runner/desk/subagent_board.h"
#include "runner/events/india_time.h"
#include "runner/journal/journal.h"
#include "runner/tools/tool_registry.h"

namespace deskd::desk {

namespace asio = boost::asio;
namespace json = boost::json;
using asio::awaitable;

namespace {

// The turn's window on its desk: steering, events, and the stall timer.
class DeskTurnContext final : public TurnContext {
 public:
  explicit DeskTurnContext(DeskCore& core) : core_(core) {}
  std::vector<Trigger> take_steering() override {
    std::vector<Trigger> messages = core_.inbox.take_all();
    for (const auto& message : messages) core_.delivered_steering.push_back(message);
    if (!messages.empty()) progress();
    return messages;
  }
  void publish(const std::string& kind, json::object data) override {
    core_.publish(kind, std::move(data));
    progress();
  }
  void progress() override { last_progress = std::chrono::steady_clock::now(); }
  std::chrono::steady_clock::time_point last_progress = std::chrono::steady_clock::now();

 private:
  DeskCore& core_;
};

// Where a turn's coroutine leaves its result for the desk loop.
struct TurnCompletion {
  explicit TurnCompletion(const asio::any_io_executor& executor) : signal(executor, asio::steady_timer::time_point::max()) {}
  asio::steady_timer signal;
  bool done = false;
  std::exception_ptr error;
  TurnOutcome outcome;
};

// The refusal a turn ended with, when a spend cap ended it.
std::optional<BudgetRefusal> budget_refusal(const std::exception_ptr& error) {
  try {
    std::rethrow_exception(error);
  } catch (const BudgetReached& reached) {
    return reached.refusal();
  } catch (...) {
    return std::nullopt;
  }
}

bool is_cancellation(const std::exception_ptr& error) {
  try {
    std::rethrow_exception(error);
  } catch (const boost::system::system_error& failure) {
    return failure.code() == asio::error::operation_aborted;
  } catch (...) {
    return false;
  }
}

}  // namespace

std::string_view desk_state_name(DeskState state) {
  switch (state) {
    case DeskState::stopped: return "stopped";
    case DeskState::starting: return "starting";
    case DeskState::idle: return "idle";
    case DeskState::running: return "running";
  }
  return "unknown";
}

DeskCore::DeskCore(asio::any_io_executor executor_in, DeskSettings settings_in, EventBus& bus_in,
                   std::shared_ptr<TurnRunner> runner_in, const Clock& clock_in, DeskParts parts_in)
    : executor(std::move(executor_in)),
      settings(std::move(settings_in)),
      bus(bus_in),
      runner(std::move(runner_in)),
      clock(clock_in),
      parts(std::move(parts_in)),
      inbox([this](const char* kind, json::object data) { publish(kind, std::move(data)); }),
      wake(executor, asio::steady_timer::time_point::max()),
      // Its children catch what they throw: the answer says it (answer_beside).
      beside(executor, {}),
      turn_ended(executor, asio::steady_timer::time_point::max()) {
  if (parts.journal != nullptr) worker = std::make_unique<asio::thread_pool>(1);
}

void DeskCore::attach_subagents() {
  if (parts.subagents == nullptr) return;
  // Subagents run on the desk's executor: their events are the desk's, journaled under it,
  // and progress of the turn that started them.
  std::weak_ptr<DeskCore> weak = weak_from_this();
  parts.subagents->attach(
      [weak](const char* kind, json::object data) {
        if (auto core = weak.lock()) core->publish(kind, std::move(data));
      },
      [weak] {
        auto core = weak.lock();
        if (core && core->turn_progress) core->turn_progress();
      });
}

Event DeskCore::publish(const std::string& kind, json::object data) {
  Event event = bus.publish(settings.name, kind, std::move(data));
  // The table says who journals each kind: TRIGGER_ACCEPTED is journaled by submit itself,
  // which must see the failure; JOURNAL_WRITE_FAILED by nobody.
  if (parts.journal == nullptr || journaling_of(kind) != Journaling::desk) return event;
  if (auto appended = parts.journal->append(event); !appended.ok()) {
    journal_refused(event, appended.error());
  } else {
    journal_failing = false;
    compact_journal_if_due();
  }
  return event;
}

void DeskCore::publish_flushed(const std::string& kind, json::object data, Flushed then) {
  Event event = bus.publish(settings.name, kind, std::move(data));
  if (parts.journal == nullptr || journaling_of(kind) != Journaling::desk) return then(*this, success());
  parts.journal->append_flushed(event, [self = shared_from_this(), event, then = std::move(then)](Result<void> flushed) mutable {
    // On the journal's flusher thread: the desk's state is touched on its executor only.
    asio::post(self->executor, [self, event = std::move(event), then = std::move(then), flushed = std::move(flushed)]() mutable {
      if (!flushed.ok()) {
        self->journal_refused(event, flushed.error());
      } else {
        self->journal_failing = false;
        self->compact_journal_if_due();
      }
      then(*self, std::move(flushed));
    });
  });
}

void DeskCore::journal_refused(const Event& event, const Error& error) {
  // Every refused line that names a trigger is told (a lost finish line would run its
  // trigger again after a restart); of the others, the first of a run of failures.
  const json::value* trigger = event.data.if_contains("trigger");
  const bool names_trigger = trigger != nullptr && trigger->is_string();
  if (journal_failing && !names_trigger) return;
  journal_failing = true;
  json::object data{{"event", event.id}, {"kind", event.kind}, {"error", error.what}};
  if (names_trigger) data["trigger"] = *trigger;
  // On the bus only: the journal is what refused it (a held line is written later).
  bus.publish(settings.name, event_kind::kJournalWriteFailed, std::move(data));
}

void DeskCore::enqueue(Trigger trigger, bool at_front) {
  const std::string id = trigger.id;
  if (at_front) queue.push_front(std::move(trigger));
  else queue.push_back(std::move(trigger));
  queued = queue.size();
  publish(event_kind::kTriggerQueued, {{"trigger", id}, {"queued", queue.size()}});
  wake.cancel();
}

void DeskCore::finish(const Trigger& trigger) {
  publish(event_kind::kTriggerFinished, {{"trigger", trigger.id}});
}

void DeskCore::answer(const Trigger& trigger, const std::string& command, std::string reply) {
  publish(event_kind::kCommandAnswered, {{"trigger", trigger.id}, {"command", command}, {"reply", std::move(reply)}});
}

void DeskCore::accept(Trigger trigger) {
  if (trigger.kind == Trigger::Kind::command) {
    handle_command(*this, std::move(trigger));
  } else if (state == DeskState::running && !trigger.queued_explicitly) {
    inbox.put(std::move(trigger));
  } else {
    enqueue(std::move(trigger));
  }
}

std::string DeskCore::context_line(const Trigger& trigger) const {
  const auto now = clock.now();
  std::string woke;
  if (trigger.source == Trigger::Source::schedule) {
    woke = "the schedule '" + trigger.schedule + "'";
  } else {
    woke = trigger.sender.empty() ? "a message" : "a message from " + trigger.sender;
  }
  if (trigger.redelivered) woke += ", re-delivered after a restart";
  if (trigger.redelivered && !trigger.redelivery_reason.empty()) woke += " (" + trigger.redelivery_reason + ")";
  std::string line = "It is " + format_india_time(now) + ". Woken by " + woke + ".";
  if (parts.market_status != nullptr) line += "\n" + parts.market_status->describe(now);
  if (parts.budget != nullptr) {
    if (std::string left = parts.budget->context_line(); !left.empty()) line += "\n" + left;
  }
  return line;
}

awaitable<void> DeskCore::handle(Trigger trigger) {
  if (co_await run_queued_command(*this, trigger)) co_return;
  if (paused) {
    publish(event_kind::kTurnFinished,
            {{"trigger", trigger.id}, {"paused", true},
             {"reply", "The desk is paused, so no model was asked. Send /resume to let it work again."}});
    finish(trigger);
    co_return;
  }
  if (parts.budget != nullptr) {
    // At a daily cap no model is asked: the trigger is answered with the cap, until the
    // next India day or a raise (deskctl budget --add).
    if (auto reached = parts.budget->at_daily_cap()) {
      json::object data = reached->data();
      data["trigger"] = trigger.id;
      publish(event_kind::kBudgetReached, std::move(data));
      finish(trigger);
      co_return;
    }
  }
  if (parts.session_keeper != nullptr && parts.session_keeper->needs_rollover()) {
    try {
      const std::string session = co_await parts.session_keeper->roll_over(*runner);
      publish(event_kind::kSessionRolledOver, {{"session", session}, {"reason", "a new India day"}});
    } catch (const std::exception& error) {
      // "rollover": the turn itself still runs; a restart must not read this as its end.
      publish(event_kind::kTurnFailed, {{"trigger", trigger.id}, {"rollover", true},
                                        {"error", std::string("The day's rollover failed: ") + error.what()}});
    }
  }
  co_await run_turn(trigger, context_line(trigger) + "\n\n" + trigger.text);
}

awaitable<void> DeskCore::run_turn(const Trigger& trigger, std::string message) {
  state = DeskState::running;
  running_trigger = trigger;
  running_since = clock.now();
  stop_requested = false;
  delivered_steering.clear();
  publish(event_kind::kTurnStarted, {{"trigger", trigger.id}});
  if (parts.budget != nullptr) parts.budget->begin_turn();

  auto stop = std::make_shared<asio::cancellation_signal>();
  turn_stop = stop;
  auto completion = std::make_shared<TurnCompletion>(executor);
  DeskTurnContext context(*this);
  turn_progress = [&context] { context.progress(); };
  asio::co_spawn(executor, runner->run_turn(std::move(message), context),
                 asio::bind_cancellation_slot(stop->slot(), [completion](std::exception_ptr error, TurnOutcome outcome) {
                   completion->done = true;
                   completion->error = error;
                   completion->outcome = std::move(outcome);
                   completion->signal.cancel();
                 }));

  // Wait for the turn, watching for a stall. The context lives in this frame, so this frame
  // waits for the turn's end even when the desk itself is being cancelled.
  co_await asio::this_coro::throw_if_cancelled(false);
  bool stalled = false;
  bool desk_stopping = false;
  while (!completion->done) {
    if (!stalled && !stop_requested) {
      completion->signal.expires_at(context.last_progress +
                                    std::chrono::duration_cast<std::chrono::steady_clock::duration>(settings.stall_timeout));
    } else {
      completion->signal.expires_at(asio::steady_timer::time_point::max());
    }
    auto [error] = co_await completion->signal.async_wait(kAwait);
    if (completion->done) break;
    if ((co_await asio::this_coro::cancellation_state).cancelled() != asio::cancellation_type::none) {
      co_await asio::this_coro::reset_cancellation_state();
      desk_stopping = true;
      stop->emit(asio::cancellation_type::terminal);
      continue;
    }
    if (!error && !stalled && std::chrono::steady_clock::now() >= context.last_progress + settings.stall_timeout) {
      stalled = true;
      stop->emit(asio::cancellation_type::terminal);
    }
  }
  co_await asio::this_coro::throw_if_cancelled(true);
  if (parts.budget != nullptr) parts.budget->end_turn();

  if (!completion->error) {
    json::object finished{{"trigger", trigger.id}, {"reply", completion->outcome.reply}};
    // Still the turn's end (a restart must not run it again), but not a whole answer.
    if (!completion->outcome.cut_reason.empty()) finished["cut"] = completion->outcome.cut_reason;
    publish(event_kind::kTurnFinished, std::move(finished));
  } else if (stalled) {
    publish(event_kind::kTurnFailed,
            {{"trigger", trigger.id}, {"stalled", true},
             {"error", "The turn made no progress for " + std::to_string(settings.stall_timeout.count() / 1000.0).substr(0, 5) +
                           " seconds (no model output, no tool event) and was ended as stalled."}});
  } else if (auto refusal = budget_refusal(completion->error)) {
    json::object data = refusal->data();
    data["trigger"] = trigger.id;
    publish(event_kind::kBudgetReached, std::move(data));
  } else if (is_cancellation(completion->error) && (stop_requested || desk_stopping)) {
    publish(event_kind::kTurnStopped, {{"trigger", trigger.id}, {"reason", desk_stopping ? "the desk stopped" : "/stop"}});
  } else {
    publish(event_kind::kTurnFailed, {{"trigger", trigger.id}, {"error", describe_exception(completion->error)}});
  }

  // Steering the turn never picked up is the next thing the desk does, in arrival order.
  std::vector<Trigger> leftover = inbox.take_undelivered();
  for (auto it = leftover.rbegin(); it != leftover.rend(); ++it) enqueue(std::move(*it), true);
  if (!desk_stopping) {
    finish(trigger);
    for (const auto& steering : delivered_steering) finish(steering);
  }
  delivered_steering.clear();
  turn_progress = nullptr;
  running_trigger.reset();
  turn_stop.reset();
  state = DeskState::idle;
  turn_ended.cancel();
  if (desk_stopping) throw boost::system::system_error(asio::error::operation_aborted);
}

DeskRuntime::DeskRuntime(asio::any_io_executor executor, DeskSettings settings, EventBus& bus,
                         std::shared_ptr<TurnRunner> turn_runner, const Clock& clock, DeskParts parts)
    : core_(std::make_shared<DeskCore>(std::move(executor), std::move(settings), bus, std::move(turn_runner), clock,
                                   std::move(parts))) {}

DeskRuntime::~DeskRuntime() {
  // A compaction in progress ends before the journal it writes can go; nothing after this
  // may write to the journal, which the desk's owner destroys next.
  if (core_->worker) core_->worker->join();
  core_->parts.journal = nullptr;
  if (core_->parts.subagents != nullptr) core_->parts.subagents->attach(nullptr, nullptr);
}

const std::string& DeskRuntime::name() const { return core_->settings.name; }
DeskState DeskRuntime::state() const { return core_->state; }
bool DeskRuntime::paused() const { return core_->paused; }
TurnRunner& DeskRuntime::turn_runner() { return *core_->runner; }
UsageTracker* DeskRuntime::usage_tracker() { return core_->parts.usage_tracker; }
std::size_t DeskRuntime::queued_count() const { return core_->queued.load(); }

void DeskRuntime::drain() { core_->draining = true; }
std::vector<CommandEntry> DeskRuntime::command_catalogue() const { return catalogue(*core_); }

namespace {

// The trigger's missing parts filled in, or why it is not this desk's.
Result<void> complete(Trigger& trigger, const DeskCore& core) {
  if (trigger.desk != core.settings.name) {
    return Error::make(ErrorCode::invalid_argument,
                       "Trigger for desk '" + trigger.desk + "' was sent to desk '" + core.settings.name + "'");
  }
  if (trigger.id.empty()) trigger.id = make_trigger_id();
  if (trigger.received == std::chrono::system_clock::time_point{}) trigger.received = core.clock.now();
  if (!trigger.kind) trigger.kind = kind_of_text(trigger.text);
  return success();
}

// Followers saw the trigger accepted: they are told it was not.
Error refuse_unjournaled(DeskCore& core, const std::string& accepted_id, const std::string& trigger_id, Error why) {
  core.bus.publish(core.settings.name, event_kind::kJournalWriteFailed,
                   {{"event", accepted_id}, {"kind", event_kind::kTriggerAccepted}, {"trigger", trigger_id},
                    {"error", why.what + " The trigger is refused."}});
  return why;
}

}  // namespace

Result<void> DeskRuntime::submit(Trigger trigger) {
  DESKD_RETURN_IF_ERROR(complete(trigger, *core_));
  // Journaled before it is acknowledged: once submit returns, a crash cannot lose it.
  Event accepted = core_->bus.publish(core_->settings.name, event_kind::kTriggerAccepted, to_json(trigger));
  if (core_->parts.journal != nullptr) {
    // Waits on the flusher thread, never on this desk's executor (this may be its thread).
    std::promise<Result<void>> flushed;
    auto done = flushed.get_future();
    core_->parts.journal->append_flushed(accepted, [&flushed](Result<void> result) { flushed.set_value(std::move(result)); });
    if (Result<void> result = done.get(); !result.ok()) {
      return refuse_unjournaled(*core_, accepted.id, trigger.id, std::move(result).error());
    }
  }
  asio::post(core_->executor, [core = core_, trigger = std::move(trigger)]() mutable { core->accept(std::move(trigger)); });
  return success();
}

void DeskRuntime::submit(Trigger trigger, Acknowledgement acknowledged) {
  if (auto completed = complete(trigger, *core_); !completed.ok()) {
    asio::post(core_->executor, [acknowledged = std::move(acknowledged), why = std::move(completed)]() mutable {
      acknowledged(std::move(why));
    });
    return;
  }
  Event accepted = core_->bus.publish(core_->settings.name, event_kind::kTriggerAccepted, to_json(trigger));
  // The desk takes the trigger only once it is on disk, in the order the lines were
  // written: nothing a crash could lose has been acted on or acknowledged.
  auto take = [core = core_, trigger = std::make_shared<Trigger>(std::move(trigger)), accepted_id = accepted.id,
               acknowledged = std::move(acknowledged)](Result<void> flushed) {
    asio::post(core->executor, [core, trigger, accepted_id, acknowledged, flushed = std::move(flushed)]() mutable {
      if (!flushed.ok()) {
        acknowledged(refuse_unjournaled(*core, accepted_id, trigger->id, std::move(flushed).error()));
        return;
      }
      core->accept(std::move(*trigger));
      acknowledged(success());
    });
  };
  if (core_->parts.journal == nullptr) {
    take(success());
  } else {
    core_->parts.journal->append_flushed(accepted, std::move(take));
  }
}

awaitable<void> DeskRuntime::until_no_turn() {
  auto core = core_;
  while (core->state == DeskState::running) {
    (void)co_await core->turn_ended.async_wait(kAwait);
    if ((co_await asio::this_coro::cancellation_state).cancelled() != asio::cancellation_type::none) {
      throw boost::system::system_error(asio::error::operation_aborted);
    }
  }
}

awaitable<void> DeskRuntime::run() {
  auto core = core_;
  core->state = core->parts.journal != nullptr ? DeskState::starting : DeskState::idle;
  core->attach_subagents();
  core->publish(event_kind::kDeskStarted);
  if (core->parts.session_keeper != nullptr) {
    if (auto started = core->parts.session_keeper->start(*core->runner); !started.ok()) {
      core->publish(event_kind::kTurnFailed, {{"error", "The session could not be resumed: " + started.error().what}});
    }
  }
  try {
    if (core->parts.journal != nullptr) co_await core->recover_journal();
    core->state = DeskState::idle;
    for (;;) {
      while (core->queue.empty() || core->draining) {
        core->wake.expires_at(asio::steady_timer::time_point::max());
        (void)co_await core->wake.async_wait(kAwait);
        if ((co_await asio::this_coro::cancellation_state).cancelled() != asio::cancellation_type::none) {
          throw boost::system::system_error(asio::error::operation_aborted);
        }
      }
      Trigger trigger = std::move(core->queue.front());
      core->queue.pop_front();
      core->queued = core->queue.size();
      co_await core->handle(std::move(trigger));
    }
  } catch (const boost::system::system_error& error) {
    if (error.code() != asio::error::operation_aborted) throw;
  }
  co_await asio::this_coro::reset_cancellation_state();
  co_await asio::this_coro::throw_if_cancelled(false);
  // Each /btw still running is cancelled, and waited for: its answer uses the desk's parts,
  // which the daemon may free (a reload) as soon as run() is over.
  core->beside.emit(asio::cancellation_type::terminal);
  while (!core->beside.empty()) {
    co_await core->beside.async_wait();
    co_await asio::this_coro::reset_cancellation_state();  // cancelled again: still waited for
  }
  co_await core->runner->close();
  if (core->parts.tool_registry) co_await core->parts.tool_registry->close();
  core->state = DeskState::stopped;
  core->turn_ended.cancel();
  if (core->parts.subagents != nullptr) core->parts.subagents->attach(nullptr, nullptr);
  core->publish(event_kind::kDeskStopped);
}

awaitable<std::string> DeskCore::roll_over() {
  if (parts.session_keeper == nullptr) co_return "This desk keeps no sessions, so there is nothing to roll over.";
  const std::string session = co_await parts.session_keeper->roll_over(*runner);
  publish(event_kind::kSessionRolledOver, {{"session", session}, {"reason", "/rollover"}});
  co_return "Rolled over: the day is summarised and session " + session + " has started.";
}

awaitable<std::string> DeskRuntime::roll_over() {
  auto core = core_;
  co_return co_await core->roll_over();
}

}  // namespace deskd::desk
