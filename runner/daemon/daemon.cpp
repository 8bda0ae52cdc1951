#include "runner/daemon/daemon.h"

#include <boost/asio.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/json.hpp>

#include <algorithm>

#include "base/asio_await.h"
#include "base/exception_text.h"
#include "runner/daemon/daemon_slot.h"
#include "runner/daemon/desk_assembly.h"
#include "runner/daemon/proposal_decision.h"
#include "runner/desk/desk_runtime.h"
#include "runner/desk/schedule.h"
#include "runner/desk/usage_tracker.h"
#include "runner/events/event_kinds.h"
#include "runner/events/india_time.h"
#include "runner/journal/journal_tail.h"

namespace deskd::app {

namespace asio = boost::asio;
namespace json = boost::json;
using namespace asio::experimental::awaitable_operators;

namespace {

}  // namespace

Daemon::Daemon(asio::any_io_executor executor, Config config, const Clock& clock, DaemonLog log)
    : executor_(std::move(executor)),
      config_(std::move(config)),
      clock_(clock),
      log_(std::move(log)),
      bus_(clock),
      reloads_(executor_,
               [this](std::exception_ptr escaped) { log_.error("the reload ended: " + describe_exception(escaped)); }),
      desk_came_back_(executor_, asio::steady_timer::time_point::max()) {
  bus_.add_sink([this](const desk::Event& event) {
    history_.add(event);
    journal_daemon_event(event);
    track_waiting(event);
    metrics_.observe(event);
  });
  for (const auto& desk_config : config_.desks) {
    slots_.emplace(desk_config.name, make_slot(desk_config));
  }
}

Daemon::~Daemon() {
  // A ledger being read posts its answer to the loop; it ends before anything else goes.
  if (ledger_thread_) ledger_thread_->join();
  // An assembly still under way (the loop stopped without stop()) ends before its slot goes;
  // the ones still waiting are not begun.
  abandon_starting_ = true;
  if (assembly_threads_) assembly_threads_->join();
  // stop() has run (or the loop is gone): the desks' coroutines are over, so their parts can go.
  // The quota mounts last, with time for the kernel to let go of the loop device once the
  // desk's last sandbox (its file opener among them) is gone: deskd stops, nothing waits on it.
  for (auto& [name, slot] : slots_) {
    if (!slot->desk) continue;
    sandbox::PlacesQuotaMounts quota_mounts = std::move(slot->desk->quota_mounts);
    slot->desk.reset();
    if (auto released = quota_mounts.release(std::chrono::seconds(2)); !released.ok()) {
      log_.error("desk " + name + ": " + released.error().what, about_desk(name));
    }
  }
}

// The desks journal their own events; what is published about a desk outside its runtime
// (schedules it missed, proposals decided, a desk that failed: the kinds the table says the
// daemon journals) goes to the same journal here.
void Daemon::journal_daemon_event(const desk::Event& event) {
  if (desk::journaling_of(event.kind) != desk::Journaling::daemon) return;
  const std::lock_guard lock(waiting_mutex_);  // a reload may change slots_
  auto found = slots_.find(event.desk);
  if (found == slots_.end()) return;
  Slot& slot = *found->second;
  if (slot.desk && slot.desk->journal) {
    (void)slot.desk->journal->append(event);
  } else if (slot.failure_journal) {
    (void)slot.failure_journal->append(event);
  }
}

void Daemon::track_waiting(const desk::Event& event) {
  const bool stopped = event.kind == desk::event_kind::kDeskStopped;
  // A trigger stops waiting once the desk has taken it: its turn started, it was delivered
  // into a running turn, or anything the event-kind table counts as an end came for it —
  // a failed rollover's TURN_FAILED too, which comes once the trigger is taken.
  const bool taken = event.kind == desk::event_kind::kTurnStarted ||
                     event.kind == desk::event_kind::kSteeringDelivered ||
                     desk::turn_end_of(event.kind) != desk::TurnEnd::no;
  if (!taken && !stopped) return;
  const std::lock_guard lock(waiting_mutex_);
  auto found = slots_.find(event.desk);
  if (found == slots_.end()) return;
  Slot& slot = *found->second;
  if (stopped) {
    slot.waiting.clear();
    slot.waiting_bytes = 0;
    return;
  }
  const json::value* trigger = event.data.if_contains("trigger");
  if (trigger == nullptr || !trigger->is_string()) return;
  auto waiting = slot.waiting.find(std::string(trigger->get_string()));
  if (waiting == slot.waiting.end()) return;
  slot.waiting_bytes -= waiting->second;
  slot.waiting.erase(waiting);
}

std::unique_ptr<Daemon::Slot> Daemon::make_slot(const DeskConfig& desk) {
  metrics_.know_desk(desk.name);
  const auto report = [this, name = desk.name](std::string what) {
    return [this, name, what = std::move(what)](std::exception_ptr escaped) {
      log_.error(what + " ended: " + describe_exception(escaped), about_desk(name));
    };
  };
  return std::make_unique<Slot>(executor_, desk, report("desk " + desk.name),
                                report("the schedules of desk " + desk.name));
}

asio::awaitable<void> Daemon::stop(std::chrono::milliseconds grace) {
  stopping_ = true;
  abandon_starting_ = true;
  // A reload under way finishes first (it starts nothing once deskd is stopping), and desks
  // being assembled come back (kept stopped), so that the desks below are every desk there is.
  co_await reloads_.async_wait();
  while (starting_ > 0) (void)co_await desk_came_back_.async_wait(kAwait);
  std::vector<Slot*> every_slot;
  for (auto& [name, slot] : slots_) every_slot.push_back(slot.get());
  co_await stop_slots(every_slot, grace);
}

asio::awaitable<void> Daemon::stop_slots(std::vector<Slot*> slots, std::chrono::milliseconds grace) {
  for (Slot* slot : slots) {
    slot->scheduler_part.emit(asio::cancellation_type::terminal);
    if (slot->desk) slot->desk->runtime->drain();  // the grace is for running turns, not queued ones
  }
  // One waiter for each running turn; the grace ends when they all have, or at its end.
  TaskGroup turns(executor_, {});  // until_no_turn throws only when cancelled below
  for (Slot* slot : slots) {
    if (slot->desk && slot->desk->runtime->state() == desk::DeskState::running) {
      turns.spawn(slot->desk->runtime->until_no_turn());
    }
  }
  if (!turns.empty()) {
    log_.info("waiting up to " + std::to_string(grace.count()) + " ms for running turns");
    co_await (turns.async_wait() || expire_after(grace));
    turns.emit(asio::cancellation_type::terminal);
    co_await turns.async_wait();
  }
  // Each desk ends its turn, closes its bash and sandbox, and reports DESK_STOPPED; the
  // schedules finish the journal writes they are waiting for.
  for (Slot* slot : slots) slot->runtime_part.emit(asio::cancellation_type::terminal);
  for (Slot* slot : slots) {
    co_await slot->runtime_part.async_wait();
    co_await slot->scheduler_part.async_wait();
  }
}

bool Daemon::has_desk(const std::string& name) const { return slots_.contains(name); }

control::DeskSummary Daemon::desk_summary(const Slot& slot) const {
  control::DeskSummary summary{slot.config.name, slot.config.mode, slot.config.directory.native(), "stopped", {}, {}};
  if (slot.starting) summary.state = "starting";
  if (!slot.desk) {
    summary.error = slot.error;
    return summary;
  }
  const desk::DeskRuntime& runtime = *slot.desk->runtime;
  if (slot.desk_running) summary.state = std::string(desk::desk_state_name(runtime.state()));
  control::DeskSummary::Running running{runtime.paused(), runtime.queued_count(), 0, slot.desk->model_description};
  {
    const std::lock_guard lock(waiting_mutex_);
    running.waiting_bytes = slot.waiting_bytes;
  }
  summary.running = std::move(running);
  return summary;
}

std::vector<control::DeskSummary> Daemon::desks() const {
  std::vector<control::DeskSummary> list;
  for (const auto& [name, slot] : slots_) list.push_back(desk_summary(*slot));
  return list;
}

control::DaemonStatus Daemon::daemon_status() const {
  return control::DaemonStatus{desk::iso8601_india(clock_.now()), stopping_, desks()};
}

Result<control::DeskStatus> Daemon::status(const std::string& desk_name) const {
  auto found = slots_.find(desk_name);
  if (found == slots_.end()) return unknown_desk(desk_name);
  const Slot& slot = *found->second;
  control::DeskStatus status{desk_summary(slot), egress::describe_network(slot.config.sandbox), {}};
  if (!slot.desk) return status;
  control::DeskStatus::Details details;
  details.usage = slot.desk->usage_tracker->describe();
  if (std::string caps = slot.desk->budget->describe(); !caps.empty()) details.usage += "\n" + caps;
  const auto now = clock_.now();
  for (const auto& schedule : slot.config.schedules) {
    auto next = desk::next_firing(schedule, now, slot.desk->market_status.get());
    details.schedules.push_back({schedule.name, next ? std::optional(desk::iso8601_india(*next)) : std::nullopt});
  }
  if (auto open = slot.desk->proposals->list(); open.ok()) {
    for (const auto& proposal : *open) details.open_proposals += proposal.status == "open" ? 1 : 0;
  }
  status.details = std::move(details);
  return status;
}

Result<desk::BudgetStatus> Daemon::budget(const std::string& desk_name, std::optional<double> add_usd,
                                          const std::string& who) {
  auto found = slots_.find(desk_name);
  if (found == slots_.end()) return unknown_desk(desk_name);
  const Slot& slot = *found->second;
  if (!slot.desk) {
    return Error::make(ErrorCode::refused, "Desk '" + desk_name + "' is not running, so its budget cannot be read or "
                                           "raised now; try again once it runs.");
  }
  if (!add_usd) return slot.desk->budget->status();
  DESKD_ASSIGN_OR_RETURN(desk::BudgetStatus raised, slot.desk->budget->add_today(*add_usd));
  log_.info("today's daily_usd cap of desk " + desk_name + " raised by " + desk::budget_dollars(*add_usd) + " to " +
                desk::budget_dollars(*raised.caps.daily_usd + raised.added_usd) + " by " + who,
            about_desk(desk_name));
  return raised;
}

Result<std::vector<control::DeskSpend>> Daemon::spend(const std::string& desk_name) const {
  if (!desk_name.empty() && !slots_.contains(desk_name)) return unknown_desk(desk_name);
  std::vector<control::DeskSpend> spent;
  for (const auto& [name, slot] : slots_) {
    if (!desk_name.empty() && name != desk_name) continue;
    control::DeskSpend desk_spend{name, slot->desk != nullptr, {}};
    if (slot->desk && slot->desk->usage_tracker) desk_spend.days = slot->desk->usage_tracker->days();
    spent.push_back(std::move(desk_spend));
  }
  return spent;
}

void Daemon::send(const std::string& desk_name, const std::string& text, const std::string& sender,
                  std::function<void(Result<std::string>)> sent) {
  if (stopping_) return sent(Error::make(ErrorCode::refused, "deskd is stopping and takes no new messages."));
  auto found = slots_.find(desk_name);
  if (found == slots_.end()) return sent(unknown_desk(desk_name));
  Slot& slot = *found->second;
  if (slot.starting) return hold(slot, text, sender, std::move(sent));
  if (!slot.desk || !slot.desk_running) {
    return sent(Error::make(ErrorCode::refused, "Desk '" + desk_name + "' is stopped" +
                                                    (slot.error.empty() ? std::string(".") : ": " + slot.error)));
  }
  desk::Trigger trigger;
  trigger.id = desk::make_trigger_id();
  trigger.desk = desk_name;
  trigger.text = text;
  trigger.sender = sender;
  {
    const std::lock_guard lock(waiting_mutex_);
    if (auto full = refuse_if_full(slot, text.size())) return sent(std::move(*full));
    slot.waiting[trigger.id] = text.size();
    slot.waiting_bytes += text.size();
  }
  // Not under the lock: submit publishes, and the sink that forgets taken messages takes it.
  // The answer waits for the journal's flush, off the loop; meanwhile the loop serves others.
  const std::string id = trigger.id;
  slot.desk->runtime->submit(std::move(trigger), [this, desk_name, id, bytes = text.size(),
                                                 sent = std::move(sent)](Result<void> submitted) {
    if (submitted.ok()) return sent(id);
    {
      // The slot may have gone meanwhile (a reload), and with it what it was waiting for.
      const std::lock_guard lock(waiting_mutex_);
      auto still = slots_.find(desk_name);
      if (still != slots_.end() && still->second->waiting.erase(id) > 0) still->second->waiting_bytes -= bytes;
    }
    sent(std::move(submitted).error());
  });
}

std::optional<Error> Daemon::refuse_if_full(const Slot& slot, std::size_t more) const {
  const std::size_t bytes = slot.waiting_bytes + slot.held_bytes;
  if (bytes + more <= kMaximumWaitingBytesPerDesk) return std::nullopt;
  return Error::make(ErrorCode::refused, "Desk '" + slot.config.name + "' already has " + std::to_string(bytes) +
                                             " bytes in " + std::to_string(slot.waiting.size() + slot.held.size()) +
                                             " messages waiting, and takes at most " +
                                             std::to_string(kMaximumWaitingBytesPerDesk) +
                                             " (64 MiB); send this again once it has worked through some of them.");
}

Result<std::vector<desk::CommandEntry>> Daemon::commands(const std::string& desk_name) const {
  auto found = slots_.find(desk_name);
  if (found == slots_.end()) return unknown_desk(desk_name);
  if (found->second->starting) {
    return Error::make(ErrorCode::refused, "Desk '" + desk_name + "' is starting; ask again in a moment.");
  }
  if (!found->second->desk) return Error::make(ErrorCode::refused, "Desk '" + desk_name + "' is stopped: " + found->second->error);
  return found->second->desk->runtime->command_catalogue();
}

Result<std::vector<tools::Proposal>> Daemon::proposals(const std::string& desk_name) const {
  std::vector<tools::Proposal> list;
  for (const auto& [name, slot] : slots_) {
    if (!desk_name.empty() && name != desk_name) continue;
    if (!slot->desk) continue;
    DESKD_ASSIGN_OR_RETURN(auto stored, slot->desk->proposals->list());
    for (auto& proposal : stored) list.push_back(std::move(proposal));
  }
  return list;
}

Result<tools::Proposal> Daemon::decide(const std::string& id, bool accept, const std::string& who) {
  for (auto& [name, slot] : slots_) {
    if (!slot->desk) continue;
    auto proposal = slot->desk->proposals->get(id);
    if (!proposal.ok()) continue;
    auto decided = accept ? tools::accept_proposal(*slot->desk->proposals, *slot->desk->path_policy, id)
                          : tools::reject_proposal(*slot->desk->proposals, id);
    if (!decided.ok()) {
      bus_.publish(name, desk::event_kind::kProposalRefused,
                   {{"proposal", id}, {"path", proposal->path}, {"by", who}, {"error", decided.error().what}});
      return std::move(decided).error();
    }
    bus_.publish(name, accept ? desk::event_kind::kProposalAccepted : desk::event_kind::kProposalRejected,
                 {{"proposal", id}, {"path", decided->path}, {"by", who}});
    log_.info("proposal " + id + " of desk " + name + " " + decided->status + " by " + who, about_desk(name));
    return std::move(decided).value();
  }
  return Error::make(ErrorCode::not_found, "There is no proposal '" + id + "'.");
}

std::shared_ptr<desk::EventSubscription> Daemon::subscribe() { return bus_.subscribe(executor_); }

control::EventHistory::Replay Daemon::replay(const std::string& desk_name, std::optional<std::uint64_t> after,
                                             std::size_t maximum_bytes) const {
  return history_.since(desk_name, after, maximum_bytes);
}

}  // namespace deskd::app
