#include "runner/desk/schedule.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <boost/json.hpp>
#include <cerrno>

#include "base/atomic_file.h"
#include "base/unique_fd.h"
#include "runner/desk/market_status.h"
#include "runner/journal/journal_file.h"

namespace deskd::desk {
namespace {

namespace fs = std::filesystem;
namespace json = boost::json;
using journal_file::quoted;
using std::chrono::days;
using std::chrono::sys_days;

// Long enough for any weekday pattern plus a run of holidays; a schedule that finds no day
// in this span (market days only, Saturdays only) never fires.
constexpr int kSearchDays = 400;
// How far back catch-up counts missed firings: a state file from long ago (or a clock that
// was once set to 1970) costs a bounded walk, not one per day since then.
constexpr days kLongestCountedOutage{3653};
// A state file is a few dozen bytes; anything much larger is not one.
constexpr std::size_t kMaximumStateBytes = 4096;
// Beyond this unix_ms (year 2200) the file is taken as damaged; it also keeps the
// conversion to nanoseconds far from overflow.
constexpr std::int64_t kLatestUnixMs = 7'258'118'400'000;

bool valid_time(const Schedule& schedule) {
  return schedule.hour >= 0 && schedule.hour <= 23 && schedule.minute >= 0 && schedule.minute <= 59 &&
         schedule.second >= 0 && schedule.second <= 59;
}

bool fires_on(const Schedule& schedule, IndiaDate date, const MarketStatus* market) {
  const std::chrono::weekday weekday{sys_days{date}};
  if (!schedule.days[weekday.c_encoding()]) return false;
  if (!schedule.market_days_only) return true;
  if (market != nullptr) return market->is_trading_day(date);
  return weekday != std::chrono::Saturday && weekday != std::chrono::Sunday;
}

// The firings of one schedule in (after, until].
struct Elapsed {
  std::size_t count = 0;
  std::optional<TimePoint> latest;
  std::optional<TimePoint> before_latest;
};

Elapsed elapsed_firings(const Schedule& schedule, TimePoint after, TimePoint until, const MarketStatus* market) {
  Elapsed elapsed;
  after = std::max(after, until - kLongestCountedOutage);
  for (auto firing = next_firing(schedule, after, market); firing && *firing <= until;
       firing = next_firing(schedule, *firing, market)) {
    ++elapsed.count;
    elapsed.before_latest = elapsed.latest;
    elapsed.latest = firing;
  }
  return elapsed;
}

Error malformed(const fs::path& path, const std::string& why) {
  return Error::make(ErrorCode::invalid_argument, "The schedule state file " + quoted(path) + " is malformed: " + why + ".");
}

}  // namespace

std::optional<TimePoint> next_firing(const Schedule& schedule, TimePoint after, const MarketStatus* market) {
  if (!valid_time(schedule)) return std::nullopt;
  // Days are India days: a 04:00 IST firing falls on the previous UTC day.
  const sys_days first_day{india_date(after)};
  for (int offset = 0; offset <= kSearchDays; ++offset) {
    const IndiaDate date{first_day + days{offset}};
    const TimePoint candidate = india_time_point(date, schedule.hour, schedule.minute, schedule.second);
    if (candidate > after && fires_on(schedule, date, market)) return candidate;
  }
  return std::nullopt;
}

ScheduleBook::ScheduleBook(std::vector<Schedule> schedules, const MarketStatus* market,
                           std::chrono::minutes catch_up_window, std::optional<TimePoint> checked_until)
    : schedules_(std::move(schedules)),
      market_(market),
      catch_up_window_(catch_up_window),
      checked_until_(checked_until.value_or(TimePoint{})),
      first_start_(!checked_until.has_value()) {}

std::vector<Firing> ScheduleBook::catch_up(TimePoint now, std::vector<Missed>& missed,
                                           const JournaledFirings& journaled) {
  std::vector<Firing> firings;
  if (first_start_) {
    // Nothing was promised before the desk first ran, so nothing counts as missed.
    first_start_ = false;
    checked_until_ = now;
    return firings;
  }
  // The clock went back behind what was already handled: those firings ran, or were
  // reported, once already.
  if (now <= checked_until_) return firings;
  for (std::size_t index = 0; index < schedules_.size(); ++index) {
    // The state file may be older than the journal: a crash between a firing's journal
    // line and the save. What the journal holds ran (or is re-delivered from it).
    TimePoint handled_until = checked_until_;
    if (const auto ran = journaled.find(schedules_[index].name); ran != journaled.end()) {
      handled_until = std::max(handled_until, ran->second);
    }
    if (now <= handled_until) continue;
    const Elapsed elapsed = elapsed_firings(schedules_[index], handled_until, now, market_);
    if (elapsed.count == 0) continue;
    std::size_t missed_count = elapsed.count;
    std::optional<TimePoint> latest_missed = elapsed.latest;
    if (now - *elapsed.latest <= catch_up_window_) {
      // Only the latest runs: a desk down for a week gets one morning review, not seven.
      firings.push_back(Firing{index, *elapsed.latest, *elapsed.latest < now});
      --missed_count;
      latest_missed = elapsed.before_latest;
    }
    if (missed_count > 0) missed.push_back(Missed{index, *latest_missed, missed_count});
  }
  checked_until_ = now;
  return firings;
}

std::vector<Firing> ScheduleBook::due(TimePoint now, std::vector<Missed>& missed) {
  std::vector<Firing> firings;
  if (first_start_) {
    first_start_ = false;
    checked_until_ = now;
    return firings;
  }
  if (now <= checked_until_) return firings;
  for (std::size_t index = 0; index < schedules_.size(); ++index) {
    // Several firings elapse between two calls only when the machine slept for a day or
    // more: the latest runs, the older ones are reported.
    const Elapsed elapsed = elapsed_firings(schedules_[index], checked_until_, now, market_);
    if (elapsed.latest) firings.push_back(Firing{index, *elapsed.latest, false});
    if (elapsed.count > 1) missed.push_back(Missed{index, *elapsed.before_latest, elapsed.count - 1});
  }
  checked_until_ = now;
  return firings;
}

bool ScheduleBook::has_firings_since_checked(TimePoint now) const {
  const std::optional<TimePoint> next = next_wake();
  return next && *next <= now;
}

std::optional<TimePoint> ScheduleBook::next_wake() const {
  if (first_start_) return std::nullopt;
  std::optional<TimePoint> wake;
  for (const Schedule& schedule : schedules_) {
    const auto firing = next_firing(schedule, checked_until_, market_);
    if (firing && (!wake || *firing < *wake)) wake = firing;
  }
  return wake;
}

TimePoint ScheduleBook::checked_until() const { return checked_until_; }

Result<std::optional<TimePoint>> load_checked_until(const fs::path& path) {
  const UniqueFd fd(retry_on_eintr([&] { return ::open(path.c_str(), O_RDONLY | O_CLOEXEC); }));
  if (!fd) {
    if (errno == ENOENT) return std::optional<TimePoint>{};
    return Error::from_errno(errno, "The schedule state file " + quoted(path) + " could not be opened");
  }
  std::string text;
  char buffer[1024];
  for (;;) {
    const ssize_t count = retry_on_eintr([&] { return ::read(fd.get(), buffer, sizeof buffer); });
    if (count < 0) return Error::from_errno(errno, "The schedule state file " + quoted(path) + " could not be read");
    if (count == 0) break;
    text.append(buffer, static_cast<std::size_t>(count));
    if (text.size() > kMaximumStateBytes) return malformed(path, "it is larger than " + std::to_string(kMaximumStateBytes) + " bytes");
  }
  boost::system::error_code error;
  const json::value value = json::parse(text, error);
  const json::object* object = error ? nullptr : value.if_object();
  if (object == nullptr) return malformed(path, "it is not a JSON object");
  const json::value* unix_ms = object->if_contains("unix_ms");
  if (unix_ms == nullptr) return malformed(path, "it has no \"unix_ms\"");
  std::int64_t milliseconds = -1;
  if (unix_ms->is_int64()) milliseconds = unix_ms->get_int64();
  if (unix_ms->is_uint64() && unix_ms->get_uint64() <= static_cast<std::uint64_t>(kLatestUnixMs)) {
    milliseconds = static_cast<std::int64_t>(unix_ms->get_uint64());
  }
  if (milliseconds < 0 || milliseconds > kLatestUnixMs) {
    return malformed(path, "\"unix_ms\" is not a whole number of milliseconds between 1970 and 2200");
  }
  return std::optional<TimePoint>{TimePoint{std::chrono::milliseconds{milliseconds}}};
}

Result<void> save_checked_until(const fs::path& path, TimePoint time) {
  if (path.empty() || !path.has_filename()) {
    return Error::make(ErrorCode::invalid_argument, "The schedule state needs a file name, not " + quoted(path) + ".");
  }
  std::error_code folder_error;
  if (path.has_parent_path()) fs::create_directories(path.parent_path(), folder_error);
  if (folder_error) {
    return Error::from_errno(folder_error.value(),
                             "The schedule state folder " + quoted(path.parent_path()) + " could not be created");
  }
  // Rounded down, never up: firings fall on whole seconds, so the floor stays at or after
  // every firing already handled, while rounding up could pass one that has not run yet.
  const auto unix_ms = std::chrono::floor<std::chrono::milliseconds>(time).time_since_epoch().count();
  const json::object state{{"checked_until", iso8601_india(time)}, {"unix_ms", static_cast<std::int64_t>(unix_ms)}};
  return write_file_atomically(path, json::serialize(state) + "\n", "the schedule state file");
}

}  // namespace deskd::desk
