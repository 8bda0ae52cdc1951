#pragma once
// MarketStatus: whether NSE is trading at a moment, for the line that opens every message
// to the model. Sessions (India time, Monday to Friday, except listed holidays):
//   pre-open          09:00 - 09:15
//   regular session   09:15 - 15:30
// Special sessions (Muhurat trading, Budget-day Saturdays) are not modelled.

#include <filesystem>
#include <map>
#include <string>
#include <string_view>
#include <utility>

#include "base/result.h"
#include "runner/events/india_time.h"

namespace deskd::desk {

/// What NSE is doing at a moment. Each phase includes its start and excludes its end.
enum class MarketPhase {
  closed,
  pre_open,         ///< 09:00:00 up to 09:14:59 IST on a trading day.
  regular_session,  ///< 09:15:00 up to 15:29:59 IST on a trading day.
};

/// "closed", "pre-open" or "regular session".
std::string_view market_phase_name(MarketPhase phase);

/// NSE's sessions and holidays. Immutable once built, so it is safe to share across threads.
class MarketStatus {
 public:
  /// Holidays by India date; a name may be empty.
  using Holidays = std::map<IndiaDate, std::string>;

  /// A market with no holidays (weekends only).
  MarketStatus() = default;
  /// A market closed on `holidays` as well as weekends.
  explicit MarketStatus(Holidays holidays) : holidays_(std::move(holidays)) {}

  /// Reads holidays from a file: one "YYYY-MM-DD [name]" a line; blank lines and `#`
  /// comments allowed. A missing file, a malformed line or a date listed twice is an
  /// error naming file:line.
  static Result<MarketStatus> load(const std::filesystem::path& path);
  /// Parses holiday-file `text`; `source` names it in errors ("holidays.txt:3: ...").
  static Result<MarketStatus> parse(std::string_view text, std::string_view source);

  /// The phase at `time`.
  MarketPhase phase(TimePoint time) const;
  /// Whether NSE trades on `date` (a weekday that is not a holiday).
  bool is_trading_day(IndiaDate date) const;
  /// The holiday on `date`, or nullptr when there is none (weekends are not holidays).
  const std::string* holiday(IndiaDate date) const;
  /// The start (09:15 IST) of the first regular session that begins strictly after `time`.
  TimePoint next_opening(TimePoint time) const;
  /// One line for the model's context, e.g. "NSE: open (regular session until 15:30 IST)"
  /// or "NSE: closed (weekend); opens Monday 30 November at 09:15 IST".
  std::string describe(TimePoint time) const;

  /// Every holiday, by date.
  const Holidays& holidays() const { return holidays_; }

 private:
  /// The first trading day on or after `date`.
  IndiaDate first_trading_day_from(IndiaDate date) const;

  Holidays holidays_;
};

}  // namespace deskd::desk
