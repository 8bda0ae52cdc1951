#include "runner/app/daemon.h"

#include <boost/asio.hpp>
#include <boost/json.hpp>

#include "runner/app/daemon_slot.h"
#include "runner/app/desk_assembly.h"
#include "runner/desk/desk_runtime.h"
#include "runner/desk/india_time.h"
#include "runner/desk/journal_tail.h"
#include "runner/desk/schedule.h"
#include "runner/desk/usage_tracker.h"
#include "runner/tools/proposal_decision.h"

namespace deskd::app {

namespace asio = boost::asio;
namespace json = boost::json;


namespace {

json::object proposal_json(const tools::Proposal& proposal, bool with_content) {
  json::object object{{"id", proposal.id},     {"desk", proposal.desk}, {"path", proposal.path},
                      {"reason", proposal.reason}, {"diff", proposal.diff}, {"time", proposal.time},
                      {"status", proposal.status}};
  if (with_content) object["content"] = proposal.content;
  return object;
}

Error unknown_desk(const std::string& name) { return Error::make(ErrorCode::not_found, "There is no desk '" + name + "'."); }

}  // namespace

Daemon::Daemon(asio::any_io_executor executor, Config config, const Clock& clock, DaemonLog log)
    : executor_(std::move(executor)), config_(std::move(config)), clock_(clock), log_(std::move(log)), bus_(clock) {
  bus_.add_sink([this](const desk::Event& event) {
    history_.add(event);
    journal_daemon_event(event);
    track_waiting(event);
  });
  for (const auto& desk_config : config_.desks) {
    auto slot = std::make_unique<Slot>();
    slot->config = desk_config;
    slots_.emplace(desk_config.name, std::move(slot));
  }
}

Daemon::~Daemon() {
  // stop() has run (or the loop is gone): the desks' coroutines are over, so their parts can go.
  for (auto& [name, slot] : slots_) slot->desk.reset();
}

// The desks journal their own events; what the daemon publishes about a desk (schedules it
// missed, proposals decided, a desk that failed) goes to the same journal here.
void Daemon::journal_daemon_event(const desk::Event& event) {
  static constexpr std::string_view kDaemonKinds[] = {desk::kScheduleMissed, daemon_event::kDeskFailed,
                                                      daemon_event::kProposalAccepted, daemon_event::kProposalRejected,
                                                      daemon_event::kProposalRefused, desk::event_kind::kNetworkRefused};
  bool daemon_kind = false;
  for (std::string_view kind : kDaemonKinds) daemon_kind = daemon_kind || kind == event.kind;
  if (!daemon_kind) return;
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
  static constexpr std::string_view kTakenKinds[] = {
      desk::event_kind::kTurnStarted,     desk::event_kind::kSteeringDelivered, desk::event_kind::kCommandAnswered,
      desk::event_kind::kTriggerFinished, desk::event_kind::kTurnFailed,        desk::event_kind::kTurnStopped};
  const bool stopped = event.kind == desk::event_kind::kDeskStopped;
  bool taken = false;
  for (std::string_view kind : kTakenKinds) taken = taken || kind == event.kind;
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

std::size_t Daemon::start() {
  // Ids go on from the journals' last one, so "events after e-22" means the same after a
  // restart, and their last events are history again. One more than the history keeps, so
  // that it knows when older ones are missing.
  const desk::PastEvents past =
      desk::read_recent_events(desk::journals_under(config_.runner.state_folder / "desks"), 10001);
  bus_.continue_numbering_after(past.highest_event_number);
  for (const desk::Event& event : past.events) history_.add(event);
  std::size_t started = 0;
  for (auto& [name, slot] : slots_) started += start_slot(*slot) ? 1 : 0;
  return started;
}

bool Daemon::start_slot(Slot& slot) {
  const std::string& name = slot.config.name;
  slot.error.clear();
  auto assembled = assemble_desk(executor_, config_, slot.config, bus_, clock_);
  if (!assembled.ok()) {
    slot.error = assembled.error().what;
    log_.error("desk " + name + " is kept stopped: " + slot.error);
    std::error_code ignored;
    std::filesystem::create_directories(desk_state_folder(config_, name), ignored);
    if (auto journal = desk::Journal::open(desk_state_folder(config_, name) / "journal.jsonl"); journal.ok()) {
      slot.failure_journal.emplace(std::move(journal).value());
    }
    bus_.publish(name, daemon_event::kDeskFailed, {{"error", slot.error}});
    return false;
  }
  slot.failure_journal.reset();
  slot.desk = std::move(assembled).value();
  spawn_desk_part(slot.desk->runtime->run(), slot.stop_desk, slot.desk_running, "desk " + name);
  spawn_desk_part(slot.desk->scheduler->run(), slot.stop_scheduler, slot.scheduler_running,
                  "the schedules of desk " + name);
  log_.info("desk " + name + " started (" + slot.desk->model_description + ", " + slot.config.mode + ", " +
            std::to_string(slot.config.schedules.size()) + " schedules)");
  return true;
}

void Daemon::spawn_desk_part(asio::awaitable<void> part, asio::cancellation_signal& stop, bool& running,
                             std::string what) {
  running = true;
  asio::co_spawn(executor_, std::move(part),
                 asio::bind_cancellation_slot(stop.slot(), [this, &running, what = std::move(what)](std::exception_ptr escaped) {
                   running = false;
                   if (!escaped) return;
                   try {
                     std::rethrow_exception(escaped);
                   } catch (const std::exception& error) {
                     log_.error(what + " ended: " + error.what());
                   }
                 }));
}

asio::awaitable<void> Daemon::stop(std::chrono::milliseconds grace) {
  stopping_ = true;
  asio::steady_timer timer(executor_);
  // A reload under way finishes first (it starts nothing once deskd is stopping), so that
  // the desks below are every desk there is.
  while (reloading_) {
    timer.expires_after(std::chrono::milliseconds(10));
    co_await timer.async_wait(asio::as_tuple(asio::use_awaitable));
  }
  std::vector<Slot*> every_slot;
  for (auto& [name, slot] : slots_) every_slot.push_back(slot.get());
  co_await stop_slots(every_slot, grace);
}

asio::awaitable<void> Daemon::stop_slots(std::vector<Slot*> slots, std::chrono::milliseconds grace) {
  for (Slot* slot : slots) {
    slot->stop_scheduler.emit(asio::cancellation_type::terminal);
    if (slot->desk) slot->desk->runtime->drain();  // the grace is for running turns, not queued ones
  }
  asio::steady_timer timer(executor_);
  const auto give_up = std::chrono::steady_clock::now() + grace;
  const auto any_turn_running = [&] {
    for (Slot* slot : slots) {
      if (slot->desk && slot->desk->runtime->state() == desk::DeskState::running) return true;
    }
    return false;
  };
  if (any_turn_running()) log_.info("waiting up to " + std::to_string(grace.count()) + " ms for running turns");
  while (any_turn_running() && std::chrono::steady_clock::now() < give_up) {
    timer.expires_after(std::chrono::milliseconds(20));
    co_await timer.async_wait(asio::as_tuple(asio::use_awaitable));
  }
  for (Slot* slot : slots) slot->stop_desk.emit(asio::cancellation_type::terminal);
  // Each desk ends its turn, closes its bash and sandbox, and reports DESK_STOPPED.
  const auto any_running = [&] {
    for (Slot* slot : slots) {
      if (slot->desk_running || slot->scheduler_running) return true;
    }
    return false;
  };
  while (any_running()) {
    timer.expires_after(std::chrono::milliseconds(10));
    co_await timer.async_wait(asio::as_tuple(asio::use_awaitable));
  }
}

bool Daemon::has_desk(const std::string& name) const { return slots_.contains(name); }

json::object Daemon::desk_summary(const Slot& slot) const {
  json::object summary{{"name", slot.config.name}, {"mode", slot.config.mode}, {"directory", slot.config.directory.native()}};
  if (!slot.desk) {
    summary["state"] = "stopped";
    summary["error"] = slot.error;
    return summary;
  }
  const desk::DeskRuntime& runtime = *slot.desk->runtime;
  summary["state"] = slot.desk_running ? std::string(desk::desk_state_name(runtime.state())) : std::string("stopped");
  summary["paused"] = runtime.paused();
  summary["queued"] = runtime.queued_count();
  {
    const std::lock_guard lock(waiting_mutex_);
    summary["waiting_bytes"] = slot.waiting_bytes;
  }
  summary["model"] = slot.desk->model_description;
  return summary;
}

json::array Daemon::desks() const {
  json::array list;
  for (const auto& [name, slot] : slots_) list.push_back(desk_summary(*slot));
  return list;
}

Result<json::object> Daemon::status(const std::string& desk_name) const {
  if (desk_name.empty()) {
    return json::object{{"time", desk::iso8601_india(clock_.now())}, {"stopping", stopping_}, {"desks", desks()}};
  }
  auto found = slots_.find(desk_name);
  if (found == slots_.end()) return unknown_desk(desk_name);
  const Slot& slot = *found->second;
  json::object status = desk_summary(slot);
  if (slot.desk) {
    status["usage"] = slot.desk->usage_tracker->describe();
    json::array schedules;
    const auto now = clock_.now();
    for (const auto& schedule : slot.config.schedules) {
      auto next = desk::next_firing(schedule, now, slot.desk->market_status.get());
      schedules.push_back(json::object{{"name", schedule.name},
                                       {"next", next ? json::value(desk::iso8601_india(*next)) : json::value(nullptr)}});
    }
    status["schedules"] = std::move(schedules);
    auto open = slot.desk->proposals->list();
    std::size_t open_count = 0;
    if (open.ok()) {
      for (const auto& proposal : *open) open_count += proposal.status == "open" ? 1 : 0;
    }
    status["open_proposals"] = open_count;
  }
  status["network"] = egress::describe_network(slot.config.sandbox);
  return status;
}

Result<std::string> Daemon::send(const std::string& desk_name, const std::string& text, const std::string& sender) {
  if (stopping_) return Error::make(ErrorCode::refused, "deskd is stopping and takes no new messages.");
  auto found = slots_.find(desk_name);
  if (found == slots_.end()) return unknown_desk(desk_name);
  Slot& slot = *found->second;
  if (!slot.desk || !slot.desk_running) {
    return Error::make(ErrorCode::refused, "Desk '" + desk_name + "' is stopped" +
                                               (slot.error.empty() ? std::string(".") : ": " + slot.error));
  }
  desk::Trigger trigger;
  trigger.id = desk::make_trigger_id();
  trigger.desk = desk_name;
  trigger.text = text;
  trigger.sender = sender;
  {
    const std::lock_guard lock(waiting_mutex_);
    if (slot.waiting_bytes + text.size() > kMaximumWaitingBytesPerDesk) {
      return Error::make(ErrorCode::refused,
                         "Desk '" + desk_name + "' already has " + std::to_string(slot.waiting_bytes) + " bytes in " +
                             std::to_string(slot.waiting.size()) + " messages waiting, and takes at most " +
                             std::to_string(kMaximumWaitingBytesPerDesk) +
                             " (64 MiB); send this again once it has worked through some of them.");
    }
    slot.waiting[trigger.id] = text.size();
    slot.waiting_bytes += text.size();
  }
  // Not under the lock: submit publishes, and the sink that forgets taken messages takes it.
  auto submitted = slot.desk->runtime->submit(trigger);
  if (!submitted.ok()) {
    const std::lock_guard lock(waiting_mutex_);
    if (slot.waiting.erase(trigger.id) > 0) slot.waiting_bytes -= text.size();
    return std::move(submitted).error();
  }
  return trigger.id;
}

Result<json::array> Daemon::commands(const std::string& desk_name) const {
  auto found = slots_.find(desk_name);
  if (found == slots_.end()) return unknown_desk(desk_name);
  if (!found->second->desk) return Error::make(ErrorCode::refused, "Desk '" + desk_name + "' is stopped: " + found->second->error);
  json::array list;
  for (const auto& entry : found->second->desk->runtime->command_catalogue()) {
    list.push_back(json::object{{"name", entry.name}, {"description", entry.description}});
  }
  return list;
}

Result<json::array> Daemon::proposals(const std::string& desk_name) const {
  json::array list;
  for (const auto& [name, slot] : slots_) {
    if (!desk_name.empty() && name != desk_name) continue;
    if (!slot->desk) continue;
    DESKD_ASSIGN_OR_RETURN(auto stored, slot->desk->proposals->list());
    for (const auto& proposal : stored) list.push_back(proposal_json(proposal, false));
  }
  return list;
}

Result<json::object> Daemon::decide(const std::string& id, bool accept, const std::string& who) {
  for (auto& [name, slot] : slots_) {
    if (!slot->desk) continue;
    auto proposal = slot->desk->proposals->get(id);
    if (!proposal.ok()) continue;
    auto decided = accept ? tools::accept_proposal(*slot->desk->proposals, *slot->desk->path_policy, id)
                          : tools::reject_proposal(*slot->desk->proposals, id);
    if (!decided.ok()) {
      bus_.publish(name, daemon_event::kProposalRefused,
                   {{"proposal", id}, {"path", proposal->path}, {"by", who}, {"error", decided.error().what}});
      return std::move(decided).error();
    }
    bus_.publish(name, accept ? daemon_event::kProposalAccepted : daemon_event::kProposalRejected,
                 {{"proposal", id}, {"path", decided->path}, {"by", who}});
    log_.info("proposal " + id + " of desk " + name + " " + decided->status + " by " + who);
    return proposal_json(*decided, false);
  }
  return Error::make(ErrorCode::not_found, "There is no proposal '" + id + "'.");
}

std::shared_ptr<desk::EventSubscription> Daemon::subscribe() { return bus_.subscribe(executor_); }

control::EventHistory::Replay Daemon::replay(const std::string& desk_name, std::optional<std::uint64_t> after,
                                             std::size_t maximum_bytes) const {
  return history_.since(desk_name, after, maximum_bytes);
}

}  // namespace deskd::app
