#include <boost/asio/as_tuple.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/json.hpp>

#include <algorithm>

#include "base/asio_await.h"
#include "runner/desk/schedule.h"
#include "runner/events/event_bus.h"
#include "runner/journal/journal_tail.h"

namespace deskd::desk {
namespace {

namespace asio = boost::asio;
namespace json = boost::json;
using std::chrono::milliseconds;

// How long to sleep before looking again. The timer runs on the steady clock while firings
// are judged by `clock`, so the sleep is capped at `recheck`: a wall-clock jump forward is
// noticed within one recheck, and a jump back only makes the next look find nothing due.
milliseconds sleep_before(TimePoint wake, TimePoint now, milliseconds recheck) {
  const auto until_wake = std::chrono::ceil<milliseconds>(wake - now);
  return std::clamp(until_wake, milliseconds{1}, std::max(recheck, milliseconds{1}));
}

std::string minutes_text(std::chrono::minutes window) {
  const auto count = window.count();
  return std::to_string(count) + (count == 1 ? " minute" : " minutes");
}

// A firing that ran just before a crash is among the journal's last lines: only the
// restarted desk's first events come after it.
constexpr std::size_t kJournaledTriggersRead = 10000;
constexpr std::uint64_t kJournalBytesRead = 4 * 1024 * 1024;

}  // namespace

JournaledFirings read_journaled_firings(const std::filesystem::path& journal) {
  JournaledFirings firings;
  const PastEvents past = read_recent_events({journal}, kJournaledTriggersRead, kJournalBytesRead,
                                             event_kind::kTriggerAccepted);
  for (const Event& event : past.events) {
    const Result<Trigger> trigger = trigger_from_json(event.data);
    if (!trigger.ok() || trigger->source != Trigger::Source::schedule) continue;
    const TimePoint ran = trigger->due.value_or(trigger->received);
    auto [entry, added] = firings.emplace(trigger->schedule, ran);
    if (!added) entry->second = std::max(entry->second, ran);
  }
  return firings;
}

Scheduler::Scheduler(asio::any_io_executor executor, std::vector<Schedule> schedules, SchedulerSettings settings,
                     Submit submit, EventBus& bus, const Clock& clock, milliseconds recheck)
    : executor_(std::move(executor)),
      schedules_(std::move(schedules)),
      settings_(std::move(settings)),
      submit_(std::move(submit)),
      bus_(bus),
      clock_(clock),
      recheck_(recheck) {}

void Scheduler::publish_missed(const Schedule& schedule, TimePoint due, std::size_t count, std::string reason) {
  bus_.publish(settings_.desk, event_kind::kScheduleMissed,
               {{"schedule", schedule.name},
                {"due", iso8601_india(due)},
                {"missed", static_cast<std::uint64_t>(count)},
                {"reason", std::move(reason)}});
}

asio::awaitable<void> Scheduler::submit_firings(const ScheduleBook& book, const std::vector<Firing>& firings) {
  if (firings.empty()) co_return;
  // The acknowledgements come back on the loop once the journal has the triggers on disk
  // (one fsync for all of them); the loop goes on meanwhile.
  struct Acknowledgements {
    explicit Acknowledgements(const asio::any_io_executor& executor)
        : all_in(executor, asio::steady_timer::time_point::max()) {}
    asio::steady_timer all_in;  // cancelled by the last acknowledgement
    std::size_t waiting = 0;
    std::vector<std::pair<std::size_t, Error>> refused;  // by index into `firings`
  };
  auto acknowledgements = std::make_shared<Acknowledgements>(executor_);
  acknowledgements->waiting = firings.size();
  for (std::size_t index = 0; index < firings.size(); ++index) {
    const Firing& firing = firings[index];
    const Schedule& schedule = book.schedules()[firing.schedule];
    Trigger trigger{.id = make_trigger_id(), .desk = settings_.desk, .source = Trigger::Source::schedule,
                    .text = schedule.text, .sender = "", .schedule = schedule.name, .received = clock_.now(),
                    .due = firing.due};
    submit_(std::move(trigger), [acknowledgements, index, executor = executor_](Result<void> submitted) {
      asio::post(executor, [acknowledgements, index, submitted = std::move(submitted)] {
        if (!submitted.ok()) acknowledgements->refused.emplace_back(index, submitted.error());
        if (--acknowledgements->waiting == 0) acknowledgements->all_in.cancel();
      });
    });
  }
  // Waited for even once cancelled: a firing the journal is writing still counts (the
  // caller saves checked_until after this), and deskd's stop lets the write finish.
  while (acknowledgements->waiting > 0) (void)co_await acknowledgements->all_in.async_wait(kAwait);
  std::sort(acknowledgements->refused.begin(), acknowledgements->refused.end(),
            [](const auto& one, const auto& other) { return one.first < other.first; });
  for (const auto& [index, why] : acknowledgements->refused) {
    publish_missed(book.schedules()[firings[index].schedule], firings[index].due, 1,
                   "The desk refused the trigger: " + why.what);
  }
}

void Scheduler::save(TimePoint checked_until) {
  auto saved = save_checked_until(settings_.state_file, checked_until);
  if (saved.ok()) {
    save_failing_ = false;
    return;
  }
  // Once per run of failures: a full disk must not turn into an event every recheck.
  if (save_failing_) return;
  save_failing_ = true;
  bus_.publish(settings_.desk, event_kind::kScheduleStateNotSaved,
               {{"reason", saved.error().what}, {"state_file", settings_.state_file.string()}});
}

asio::awaitable<void> Scheduler::run() {
  // Cancellation is read from the state after each wait, so that run() ends normally
  // instead of by an exception from the next co_await.
  co_await asio::this_coro::throw_if_cancelled(false);

  std::optional<TimePoint> checked_until;
  if (auto loaded = load_checked_until(settings_.state_file); loaded.ok()) {
    checked_until = *loaded;
  } else {
    // Without the state nobody knows what was missed: say so once, and start afresh
    // rather than guess (a guess could run a firing twice). The next save repairs the file.
    bus_.publish(settings_.desk, event_kind::kScheduleMissed,
                 {{"reason", "The schedule state could not be read (" + loaded.error().what +
                                 ") so firings missed while deskd was not running are unknown."},
                  {"state_file", settings_.state_file.string()}});
  }
  ScheduleBook book(schedules_, settings_.market, settings_.catch_up_window, checked_until);

  std::vector<Missed> missed;
  const TimePoint now = clock_.now();
  // Read only when something is due for catch-up: most starts have nothing to fire.
  JournaledFirings journaled;
  if (!settings_.journal_file.empty() && book.has_firings_since_checked(now)) {
    journaled = read_journaled_firings(settings_.journal_file);
  }
  const std::vector<Firing> late = book.catch_up(now, missed, journaled);
  for (const Missed& each : missed) {
    const bool latest_ran = std::any_of(late.begin(), late.end(),
                                        [&](const Firing& firing) { return firing.schedule == each.schedule; });
    const std::string window = minutes_text(settings_.catch_up_window);
    publish_missed(book.schedules()[each.schedule], each.due, each.count,
                   latest_ran ? "deskd was not running; only the latest missed firing runs at start (within the "
                                "catch-up window of " + window + ")"
                              : "deskd was not running; the firing is older than the catch-up window of " + window);
  }
  co_await submit_firings(book, late);
  // A desk without schedules has nothing to check: no file, no fsyncs on the event loop at
  // each start (a schedule added later starts afresh, as on a first start).
  if (!schedules_.empty()) save(book.checked_until());

  asio::steady_timer timer(executor_);
  for (;;) {
    if ((co_await asio::this_coro::cancellation_state).cancelled() != asio::cancellation_type::none) co_return;
    const std::optional<TimePoint> wake = book.next_wake();
    if (wake) {
      timer.expires_after(sleep_before(*wake, clock_.now(), recheck_));
    } else {
      timer.expires_at(asio::steady_timer::time_point::max());  // no schedule will ever fire
    }
    const auto [error] = co_await timer.async_wait(kAwait);
    if (error == asio::error::operation_aborted) co_return;
    if ((co_await asio::this_coro::cancellation_state).cancelled() != asio::cancellation_type::none) co_return;
    // Due only once `clock` has reached a firing: an early timer finds nothing and sleeps again.
    std::vector<Missed> skipped;
    const std::vector<Firing> firings = book.due(clock_.now(), skipped);
    for (const Missed& each : skipped) {
      publish_missed(book.schedules()[each.schedule], each.due, each.count,
                     "deskd was not running on time (was the machine asleep?); only the latest firing runs");
    }
    if (firings.empty()) continue;
    co_await submit_firings(book, firings);
    save(book.checked_until());
  }
}

}  // namespace deskd::desk
