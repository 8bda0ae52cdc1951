#pragma once
// India time (IST, Asia/Kolkata) computed from a fixed +05:30 offset, not from the host's
// time zone database: India has kept +05:30 without daylight saving since 1945, and a
// desk must tell the same time on a host whose TZ is UTC, unset, or missing tzdata.

#include <chrono>
#include <optional>
#include <string>
#include <string_view>

namespace deskd::desk {

using TimePoint = std::chrono::system_clock::time_point;

/// India's offset from UTC.
inline constexpr std::chrono::minutes kIndiaUtcOffset{5 * 60 + 30};

/// A calendar day in India; compares with ==, <, ... so "is it a new India day" is a comparison.
using IndiaDate = std::chrono::year_month_day;

/// The fields of a moment as a clock in India shows it (seconds truncated).
struct IndiaTime {
  int year = 0;
  unsigned month = 0;  ///< 1..12
  unsigned day = 0;    ///< 1..31
  int hour = 0;        ///< 0..23
  int minute = 0;
  int second = 0;
  std::chrono::weekday weekday;

  /// The India calendar day of this moment.
  IndiaDate date() const;
};

/// The moment `time` as India shows it.
IndiaTime india_time(TimePoint time);

/// The India calendar day that `time` falls on (it changes at 18:30:00 UTC).
IndiaDate india_date(TimePoint time);

/// The moment an India clock shows `hour`:`minute`:`second` on `date`.
TimePoint india_time_point(IndiaDate date, int hour, int minute, int second = 0);

/// The moment the India day holding `time` began (00:00:00 IST).
TimePoint start_of_india_day(TimePoint time);

/// For people and the model: "Monday 30 November 2026, 09:14:05 IST".
std::string format_india_time(TimePoint time);

/// "Monday 30 November": a date near enough that the year goes without saying.
std::string format_india_day(IndiaDate date);

/// For machines: "2026-11-30T09:14:05+05:30".
std::string iso8601_india(TimePoint time);

/// For people, from iso8601_india's text: "2026-11-30 09:14:05 IST". Any other text (a
/// journal written elsewhere, another offset) is returned as it is, zone and all.
std::string readable_india_time(std::string_view iso8601);

/// The clock alone, for a line of events: "09:14:05 IST"; other text as it is.
std::string readable_india_clock(std::string_view iso8601);

/// "2026-11-30".
std::string iso_date(IndiaDate date);

/// Parses exactly "YYYY-MM-DD" naming a real calendar day; anything else is nullopt.
std::optional<IndiaDate> parse_iso_date(std::string_view text);

/// "Monday" ... "Sunday".
std::string_view weekday_name(std::chrono::weekday weekday);

/// "January" ... "December" for 1..12; "" otherwise.
std::string_view month_name(unsigned month);

}  // namespace deskd::desk
