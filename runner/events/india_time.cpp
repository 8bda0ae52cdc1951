#include "runner/events/india_time.h"

#include <array>
#include <cstdio>

namespace deskd::desk {
namespace {

using std::chrono::days;
using std::chrono::floor;
using std::chrono::sys_days;

constexpr std::array<std::string_view, 7> kWeekdayNames = {
    "Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"};
constexpr std::array<std::string_view, 12> kMonthNames = {
    "January", "February", "March",     "April",   "May",      "June",
    "July",    "August",   "September", "October", "November", "December"};

// Shifting by the offset and then reading the result as if it were UTC gives India's
// wall clock; floor (not a cast) keeps moments before 1970 on the right day and second.
std::chrono::sys_seconds india_wall_clock(TimePoint time) {
  return floor<std::chrono::seconds>(time) + kIndiaUtcOffset;
}

int digits(std::string_view text, std::size_t position, std::size_t count) {
  int value = 0;
  for (std::size_t index = position; index < position + count; ++index) {
    const char c = text[index];
    if (c < '0' || c > '9') return -1;
    value = value * 10 + (c - '0');
  }
  return value;
}

}  // namespace

IndiaDate IndiaTime::date() const {
  return IndiaDate{std::chrono::year{year}, std::chrono::month{month}, std::chrono::day{day}};
}

IndiaTime india_time(TimePoint time) {
  const auto wall_clock = india_wall_clock(time);
  const auto day_start = floor<days>(wall_clock);
  const IndiaDate date{day_start};
  const std::chrono::hh_mm_ss since_midnight{wall_clock - day_start};
  IndiaTime result;
  result.year = static_cast<int>(date.year());
  result.month = static_cast<unsigned>(date.month());
  result.day = static_cast<unsigned>(date.day());
  result.hour = static_cast<int>(since_midnight.hours().count());
  result.minute = static_cast<int>(since_midnight.minutes().count());
  result.second = static_cast<int>(since_midnight.seconds().count());
  result.weekday = std::chrono::weekday{day_start};
  return result;
}

IndiaDate india_date(TimePoint time) { return IndiaDate{floor<days>(india_wall_clock(time))}; }

TimePoint india_time_point(IndiaDate date, int hour, int minute, int second) {
  return sys_days{date} + std::chrono::hours{hour} + std::chrono::minutes{minute} +
         std::chrono::seconds{second} - kIndiaUtcOffset;
}

TimePoint start_of_india_day(TimePoint time) { return india_time_point(india_date(time), 0, 0); }

std::string format_india_time(TimePoint time) {
  const IndiaTime india = india_time(time);
  char buffer[96];
  std::snprintf(buffer, sizeof buffer, "%s %u %s %d, %02d:%02d:%02d IST",
                std::string(weekday_name(india.weekday)).c_str(), india.day,
                std::string(month_name(india.month)).c_str(), india.year, india.hour, india.minute,
                india.second);
  return buffer;
}

std::string format_india_day(IndiaDate date) {
  std::string text(weekday_name(std::chrono::weekday{sys_days{date}}));
  text += ' ';
  text += std::to_string(static_cast<unsigned>(date.day()));
  text += ' ';
  text += month_name(static_cast<unsigned>(date.month()));
  return text;
}

namespace {

// Exactly "YYYY-MM-DDTHH:MM:SS+05:30", as iso8601_india writes it.
bool is_iso8601_india(std::string_view text) {
  constexpr std::string_view kShape = "dddd-dd-ddTdd:dd:dd+05:30";
  if (text.size() != kShape.size()) return false;
  for (std::size_t index = 0; index < kShape.size(); ++index) {
    const bool digit = text[index] >= '0' && text[index] <= '9';
    if (kShape[index] == 'd' ? !digit : text[index] != kShape[index]) return false;
  }
  return true;
}

}  // namespace

std::string readable_india_time(std::string_view iso8601) {
  if (!is_iso8601_india(iso8601)) return std::string(iso8601);
  return std::string(iso8601.substr(0, 10)) + ' ' + std::string(iso8601.substr(11, 8)) + " IST";
}

std::string readable_india_clock(std::string_view iso8601) {
  if (!is_iso8601_india(iso8601)) return std::string(iso8601);
  return std::string(iso8601.substr(11, 8)) + " IST";
}

std::string iso8601_india(TimePoint time) {
  const IndiaTime india = india_time(time);
  char buffer[96];
  std::snprintf(buffer, sizeof buffer, "%04d-%02u-%02uT%02d:%02d:%02d+05:30", india.year,
                india.month, india.day, india.hour, india.minute, india.second);
  return buffer;
}

std::string iso_date(IndiaDate date) {
  char buffer[48];
  std::snprintf(buffer, sizeof buffer, "%04d-%02u-%02u", static_cast<int>(date.year()),
                static_cast<unsigned>(date.month()), static_cast<unsigned>(date.day()));
  return buffer;
}

std::optional<IndiaDate> parse_iso_date(std::string_view text) {
  if (text.size() != 10 || text[4] != '-' || text[7] != '-') return std::nullopt;
  const int year = digits(text, 0, 4);
  const int month = digits(text, 5, 2);
  const int day = digits(text, 8, 2);
  if (year < 0 || month < 0 || day < 0) return std::nullopt;
  const IndiaDate date{std::chrono::year{year}, std::chrono::month{static_cast<unsigned>(month)},
                       std::chrono::day{static_cast<unsigned>(day)}};
  // ok() refuses month 13, 31 April and 29 February outside leap years.
  if (!date.ok()) return std::nullopt;
  return date;
}

std::string_view weekday_name(std::chrono::weekday weekday) {
  return weekday.ok() ? kWeekdayNames[weekday.c_encoding()] : std::string_view{};
}

std::string_view month_name(unsigned month) {
  return month >= 1 && month <= 12 ? kMonthNames[month - 1] : std::string_view{};
}

}  // namespace deskd::desk
