// A desk's start after a stop or a crash: what its journal holds of the triggers an earlier
// deskd accepted and never finished, and of the lines it could not read — each told as an
// event (TRIGGER_REDELIVERED, TRIGGER_FINISHED with "recovered", JOURNAL_DAMAGED) — whether
// it was left paused (DESK_PAUSED), and the journal kept small (JOURNAL_COMPACTED).

#include <boost/asio.hpp>
#include <boost/json.hpp>

#include "runner/desk/desk_core.h"
#include "runner/journal/journal.h"

namespace deskd::desk {

namespace asio = boost::asio;
namespace json = boost::json;
using asio::awaitable;

namespace {

// Damaged lines told one by one; past this many, one event counts the rest.
constexpr std::size_t kDamagedLinesTold = 20;

json::object compaction_data(const Journal& journal, const Journal::Compaction& compaction) {
  return {{"file", journal.path().native()},        {"bytes_before", compaction.bytes_before},
          {"bytes_after", compaction.bytes_after},  {"lines_before", compaction.lines_before},
          {"lines_kept", compaction.lines_kept},    {"milliseconds", compaction.took.count()},
          {"previous", compaction.previous.native()}};
}

std::string redelivery_reason(const OpenTrigger& open) {
  std::string reason;
  if (open.damaged_line) reason = "Read back from damaged journal line " + std::to_string(*open.damaged_line) + ". ";
  const std::string accepted = open.accepted_event.empty() ? std::string() : " (" + open.accepted_event + ")";
  switch (open.progress) {
    case OpenTrigger::Progress::waiting:
      return reason + "It was accepted" + accepted + " and deskd stopped before handling it.";
    case OpenTrigger::Progress::started:
      if (open.progress_event.ends_with(event_kind::kSteeringDelivered)) {
        return reason + "It reached a running turn as steering (" + open.progress_event +
               ") and no end of that turn was journaled: deskd was killed during it, or the journal could not take "
               "its end.";
      }
      return reason + "Its turn had begun (" + open.progress_event +
             ") and no end of it was journaled: deskd was killed during the turn, or the journal could not take the "
             "turn's end. The turn may have done part of its work.";
    case OpenTrigger::Progress::stopped:
      return reason + "deskd stopped during its turn (" + open.progress_event + "); the turn may have done part of its work.";
    case OpenTrigger::Progress::ended: break;
  }
  return reason;
}

}  // namespace

awaitable<void> DeskCore::recover_journal() {
  recovering = true;
  Journal* journal = parts.journal;
  // Built in statements of their own, not inside the co_await expression: g++ 12 destroys a
  // temporary lambda's captures twice when the full expression suspends.
  auto job = [journal]() -> awaitable<std::optional<Result<Journal::Recovery>>> { co_return journal->recover(); };
  auto on_worker = asio::co_spawn(worker->get_executor(), std::move(job), asio::use_awaitable);
  std::optional<Result<Journal::Recovery>> read = co_await std::move(on_worker);
  recovering = false;
  if ((co_await asio::this_coro::cancellation_state).cancelled() != asio::cancellation_type::none) {
    throw boost::system::system_error(asio::error::operation_aborted);
  }
  if (!read || !read->ok()) {
    const std::string why = read ? read->error().what : std::string("reading it failed");
    publish(event_kind::kJournalDamaged,
            {{"file", journal->path().native()}, {"error", why + " Nothing of it could be re-delivered."}});
    co_return;
  }
  Journal::Recovery& recovery = read->value();

  // The damaged lines are read where they are now: in the previous journal, once rewritten.
  const std::string damaged_file = recovery.compaction ? recovery.compaction->previous.native() : journal->path().native();
  for (std::size_t index = 0; index < recovery.damaged.size() && index < kDamagedLinesTold; ++index) {
    const DamagedLine& damaged = recovery.damaged[index];
    json::object data{{"file", damaged_file}, {"line", damaged.line},
                      {"error", damaged_file + ":" + std::to_string(damaged.line) + ": " + damaged.problem}};
    if (!damaged.kind.empty()) data["kind"] = damaged.kind;
    if (!damaged.trigger.empty()) data["trigger"] = damaged.trigger;
    if (!damaged.recovered.empty()) data["recovered"] = damaged.recovered;
    publish(event_kind::kJournalDamaged, std::move(data));
  }
  if (recovery.damaged_count > kDamagedLinesTold) {
    const std::size_t more = recovery.damaged_count - kDamagedLinesTold;
    publish(event_kind::kJournalDamaged,
            {{"file", damaged_file}, {"lines", recovery.damaged_count},
             {"error", damaged_file + ": " + std::to_string(more) + " more damaged lines (" +
                           std::to_string(recovery.damaged_count) + " in all) were passed over."}});
  }
  if (recovery.compaction) publish(event_kind::kJournalCompacted, compaction_data(*journal, *recovery.compaction));
  if (recovery.compaction_error) {
    publish(event_kind::kJournalWriteFailed, {{"compaction", true}, {"error", recovery.compaction_error->what}});
  }

  // Paused as the last /pause or /resume before the restart left it, unless one sent since
  // (handled while the journal was read) already decided.
  if (recovery.pause_switch && !pause_set_since_start) paused = recovery.pause_switch->paused;

  // The journal's triggers go ahead of what arrived while it was read, in their order.
  std::deque<Trigger> arrived = std::exchange(queue, {});
  for (OpenTrigger& open : recovery.open_triggers) {
    Trigger& trigger = open.trigger;
    if (open.progress == OpenTrigger::Progress::ended) {
      // Its turn is over, and its reply was given: only the line saying so was lost.
      publish(event_kind::kTriggerFinished,
              {{"trigger", trigger.id},
               {"recovered", "Its turn ended before the restart (" + open.progress_event +
                                 ") but this line was not journaled then; it is not run again."}});
      continue;
    }
    if (trigger.desk.empty()) trigger.desk = settings.name;
    trigger.redelivered = true;
    if (open.progress != OpenTrigger::Progress::waiting) trigger.redelivery_reason = "its earlier turn was cut short and may have done part of the work";
    json::object data{{"trigger", trigger.id}, {"reason", redelivery_reason(open)}};
    if (trigger.kind) data["as"] = *trigger.kind == Trigger::Kind::command ? "command" : "message";
    publish(event_kind::kTriggerRedelivered, std::move(data));
    redeliver(std::move(trigger));
  }
  for (Trigger& trigger : arrived) queue.push_back(std::move(trigger));
  queued = queue.size();
  if (!queue.empty()) wake.cancel();
  compact_journal_if_due();
}

void DeskCore::redeliver(Trigger trigger) {
  if (trigger.kind == Trigger::Kind::command) {
    // Answered or queued as it would have been: a /pause pauses, a /btw is asked beside.
    handle_command(*this, std::move(trigger));
  } else {
    // A message, or a trigger journaled before kinds were: queued for a turn, as before.
    enqueue(std::move(trigger));
  }
}

void DeskCore::compact_journal_if_due() {
  if (recovering || compacting || worker == nullptr || parts.journal == nullptr || !parts.journal->wants_compaction()) return;
  compacting = true;
  Journal* journal = parts.journal;
  auto job = [journal]() -> awaitable<std::optional<Result<Journal::Compaction>>> { co_return journal->compact(); };
  auto done = [self = shared_from_this(), journal](std::exception_ptr, std::optional<Result<Journal::Compaction>> result) {
    self->compacting = false;
    if (self->parts.journal != journal) return;  // the desk is gone
    if (result && result->ok()) {
      self->publish(event_kind::kJournalCompacted, compaction_data(*journal, result->value()));
    } else {
      const std::string why = result ? result->error().what : std::string("Compacting the journal failed.");
      self->publish(event_kind::kJournalWriteFailed, {{"compaction", true}, {"error", why}});
    }
  };
  asio::co_spawn(worker->get_executor(), std::move(job), asio::bind_executor(executor, std::move(done)));
}

}  // namespace deskd::desk
