#pragma once
// Schedules: triggers a desk gives itself at an India time. A schedule fires at its time,
// never early; a market-days-only schedule skips weekends and NSE holidays. A firing missed
// while deskd was down fires once at start when it is within the desk's catch-up window;
// otherwise a SCHEDULE_MISSED event says so. Never a silent skip, never a burst, and never
// twice: a firing whose trigger the journal holds is not caught up again.
//
// ScheduleBook is the logic, driven by an injected clock; Scheduler is the coroutine that
// waits for the next firing and submits the trigger to the desk.

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>

#include <array>
#include <chrono>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "base/clock.h"
#include "base/result.h"
#include "runner/events/india_time.h"
#include "runner/events/trigger.h"

namespace deskd::desk {

class EventBus;
class MarketStatus;

// Its events: SCHEDULE_MISSED, and SCHEDULE_STATE_NOT_SAVED once per run of failures to
// save checked_until, with {"reason", "state_file"} (runner/events/event_kinds.h).

struct Schedule {
  std::string name;
  int hour = 0, minute = 0, second = 0;  ///< India time
  /// days[w] for std::chrono::weekday{w}.c_encoding() (0 = Sunday); default every day.
  std::array<bool, 7> days{true, true, true, true, true, true, true};
  bool market_days_only = false;
  std::string text;  ///< the trigger's message

  bool operator==(const Schedule&) const = default;
};

/// The first moment strictly after `after` at which `schedule` fires. `market` may be null
/// (weekends only, for market-days-only). nullopt when it never fires (no day selected, a
/// time outside 00:00:00..23:59:59, or no matching day within the next 400 days).
std::optional<TimePoint> next_firing(const Schedule& schedule, TimePoint after, const MarketStatus* market);

/// One firing that is due now.
struct Firing {
  std::size_t schedule;  ///< index into the book's schedules
  TimePoint due;         ///< when it was meant to fire
  bool late = false;     ///< missed while deskd was down, fired at start within the window
};

/// A missed firing that was too old to run.
struct Missed {
  std::size_t schedule;
  TimePoint due;           ///< the most recent missed firing
  std::size_t count = 1;   ///< how many firings were missed in all
};

/// The latest firing of each schedule that the desk's journal holds a trigger for, by
/// schedule name: what ran even when checked_until was not saved after it (a crash between
/// the trigger's journal line and the state file).
using JournaledFirings = std::map<std::string, TimePoint>;

/// Reads the journal at `journal` from its end (its last few MB, where a firing that ran
/// just before a crash is) for the schedules' triggers: each one's "due", or, on a line
/// written before triggers carried it, when it was received (no later firing of the same
/// schedule can fall between the two). A missing or unreadable journal holds none.
JournaledFirings read_journaled_firings(const std::filesystem::path& journal);

class ScheduleBook {
 public:
  /// `checked_until`: the moment up to which firings were already handled (from the state
  /// file); none on a desk's first start, when nothing counts as missed.
  ScheduleBook(std::vector<Schedule> schedules, const MarketStatus* market, std::chrono::minutes catch_up_window,
               std::optional<TimePoint> checked_until);

  /// At start: the firings missed between checked_until and `now`: for each schedule, its
  /// latest missed firing fires (late) when within the catch-up window, and every other
  /// missed firing is reported — appended to `missed`, one entry per schedule. Moves
  /// checked_until to `now`; on a first start nothing fires and nothing is missed. Only the
  /// last ten years are counted. A firing at or before the schedule's entry in `journaled`
  /// ran already: it neither fires again nor counts as missed.
  std::vector<Firing> catch_up(TimePoint now, std::vector<Missed>& missed, const JournaledFirings& journaled = {});

  /// Whether catch_up(now) would find any firing since checked_until (false on a first
  /// start): only then is the journal worth reading.
  bool has_firings_since_checked(TimePoint now) const;

  /// The firings due at or before `now` and after checked_until, at most one per schedule
  /// (its latest, not late, when several elapsed, e.g. while the machine was suspended: the
  /// older ones are appended to `missed`, so none is skipped silently); moves checked_until
  /// to `now`. A `now` before checked_until (the clock went back) fires nothing and keeps
  /// checked_until, so nothing fires twice.
  std::vector<Firing> due(TimePoint now, std::vector<Missed>& missed);

  /// The next moment any schedule fires after checked_until; nullopt when none ever will,
  /// and on a first start until catch_up() or due() has said what "now" is.
  std::optional<TimePoint> next_wake() const;

  /// The epoch on a first start until catch_up() or due() has run.
  TimePoint checked_until() const;
  const std::vector<Schedule>& schedules() const { return schedules_; }

 private:
  std::vector<Schedule> schedules_;
  const MarketStatus* market_;
  std::chrono::minutes catch_up_window_;
  TimePoint checked_until_{};
  bool first_start_ = false;  // checked_until_ is unknown until the first catch_up()/due()
};

/// Reads and writes checked_until at `path` (a small JSON file in the desk's state folder:
/// {"checked_until": "<ISO 8601 India>", "unix_ms": N}, only unix_ms is read), atomically,
/// creating missing folders; a missing file reads as nullopt, a malformed one is an error
/// naming the path.
Result<std::optional<TimePoint>> load_checked_until(const std::filesystem::path& path);
Result<void> save_checked_until(const std::filesystem::path& path, TimePoint time);

struct SchedulerSettings {
  std::string desk;
  std::filesystem::path state_file;  ///< where checked_until is kept
  /// The desk's journal, read at start for firings that ran after the last save of the
  /// state file; empty: none is read.
  std::filesystem::path journal_file = {};
  std::chrono::minutes catch_up_window{30};
  const MarketStatus* market = nullptr;
};

/// Runs a desk's schedules until cancelled: submits each firing as a Trigger
/// (Source::schedule, text and schedule name from the schedule) through `submit`, reports
/// SCHEDULE_MISSED on `bus`, and saves checked_until after each step. Waits on real timers
/// but compares against `clock`, re-checking at least every `recheck` so a wall-clock jump is
/// noticed and nothing fires early.
///
/// An unreadable state file is reported as one SCHEDULE_MISSED {"reason", "state_file"}
/// and the schedules start afresh (as on a first start). A submit that fails is reported as
/// SCHEDULE_MISSED with the submit's error as reason. A firing counts (checked_until moves
/// past it) only once `submit` has acknowledged it, i.e. once the desk's journal holds it;
/// the loop is never blocked meanwhile. run() returns normally once cancelled (after the
/// acknowledgements it waits for); the Scheduler must outlive it.
class Scheduler {
 public:
  /// Hands a trigger to the desk and calls the acknowledgement (on any thread) once it is
  /// journaled, or with why it was refused: DeskRuntime::submit(Trigger, Acknowledgement).
  using Acknowledgement = std::function<void(Result<void>)>;
  using Submit = std::function<void(Trigger, Acknowledgement)>;
  Scheduler(boost::asio::any_io_executor executor, std::vector<Schedule> schedules, SchedulerSettings settings,
            Submit submit, EventBus& bus, const Clock& clock,
            std::chrono::milliseconds recheck = std::chrono::seconds(30));
  boost::asio::awaitable<void> run();

 private:
  boost::asio::any_io_executor executor_;
  std::vector<Schedule> schedules_;
  SchedulerSettings settings_;
  Submit submit_;
  EventBus& bus_;
  const Clock& clock_;
  std::chrono::milliseconds recheck_;
  bool save_failing_ = false;  // a SCHEDULE_STATE_NOT_SAVED is out and no save worked since

  /// Submits the firings and returns once each is acknowledged; refusals are SCHEDULE_MISSED.
  boost::asio::awaitable<void> submit_firings(const ScheduleBook& book, const std::vector<Firing>& firings);
  void publish_missed(const Schedule& schedule, TimePoint due, std::size_t count, std::string reason);
  void save(TimePoint checked_until);
};

}  // namespace deskd::desk
