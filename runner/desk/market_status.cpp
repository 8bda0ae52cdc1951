#include "runner/desk/market_status.h"

#include <cerrno>
#include <fstream>
#include <iterator>

#include "base/ascii_text.h"
#include "policy/path_resolution.h"

namespace deskd::desk {
namespace {

using std::chrono::days;
using std::chrono::sys_days;

constexpr int kPreOpenHour = 9, kPreOpenMinute = 0;
constexpr int kOpenHour = 9, kOpenMinute = 15;
constexpr int kCloseHour = 15, kCloseMinute = 30;
// A holiday list is a few dozen lines a year; anything this big is the wrong file.
constexpr std::uintmax_t kMaximumHolidayFileBytes = 1 << 20;

bool is_weekend(IndiaDate date) {
  const std::chrono::weekday weekday{sys_days{date}};
  return weekday == std::chrono::Saturday || weekday == std::chrono::Sunday;
}

IndiaDate next_day(IndiaDate date) { return IndiaDate{sys_days{date} + days{1}}; }

bool looks_like_a_date(std::string_view text) {
  if (text.size() < 10) return false;
  for (std::size_t index = 0; index < 10; ++index) {
    const bool dash = index == 4 || index == 7;
    if (dash ? text[index] != '-' : (text[index] < '0' || text[index] > '9')) return false;
  }
  return true;
}

Error line_error(std::string_view source, std::size_t line_number, std::string_view why) {
  return Error::make(
      ErrorCode::invalid_argument,
      std::string(source) + ":" + std::to_string(line_number) + ": " + std::string(why));
}

}  // namespace

std::string_view market_phase_name(MarketPhase phase) {
  switch (phase) {
    case MarketPhase::closed: return "closed";
    case MarketPhase::pre_open: return "pre-open";
    case MarketPhase::regular_session: return "regular session";
  }
  return "unknown";
}

Result<MarketStatus> MarketStatus::load(const std::filesystem::path& path) {
  std::error_code error;
  const auto size = std::filesystem::file_size(path, error);
  if (error == std::errc::no_such_file_or_directory) {
    return Error::make(ErrorCode::not_found,
                       "The NSE holiday file " + path.native() + " does not exist.");
  }
  if (error)
    return Error::from_errno(error.value(),
                             "The NSE holiday file " + path.native() + " cannot be read");
  if (size > kMaximumHolidayFileBytes) {
    return Error::make(
        ErrorCode::invalid_argument,
        "The NSE holiday file " + path.native() + " is over 1 MiB; it is not a holiday list.");
  }
  std::ifstream stream(path, std::ios::binary);
  if (!stream)
    return Error::from_errno(errno, "The NSE holiday file " + path.native() + " cannot be opened");
  const std::string text{std::istreambuf_iterator<char>(stream), std::istreambuf_iterator<char>()};
  if (stream.bad())
    return Error::from_errno(errno, "Reading the NSE holiday file " + path.native() + " failed");
  return parse(text, path.native());
}

Result<MarketStatus> MarketStatus::parse(std::string_view text, std::string_view source) {
  // A file saved by a Windows editor may start with a byte-order mark.
  if (text.starts_with("\xEF\xBB\xBF")) text.remove_prefix(3);
  Holidays holidays;
  std::map<IndiaDate, std::size_t> listed_on_line;
  std::size_t line_number = 0;
  while (!text.empty()) {
    ++line_number;
    const auto end = text.find('\n');
    std::string_view line = text.substr(0, end);
    text.remove_prefix(end == std::string_view::npos ? text.size() : end + 1);
    if (const auto comment = line.find('#'); comment != std::string_view::npos) {
      line = line.substr(0, comment);
    }
    line = trim(line);
    if (line.empty()) continue;
    const bool well_formed =
        looks_like_a_date(line) &&
        (line.size() == 10 || std::isspace(static_cast<unsigned char>(line[10])) != 0);
    if (!well_formed) {
      return line_error(source, line_number,
                        "expected a date as YYYY-MM-DD, optionally followed by the holiday's "
                        "name, not \"" +
                            policy::printable_path(line) + "\".");
    }
    const auto date = parse_iso_date(line.substr(0, 10));
    if (!date) {
      return line_error(source, line_number,
                        std::string(line.substr(0, 10)) + " is not a day of the calendar.");
    }
    const auto [earlier, inserted] = listed_on_line.emplace(*date, line_number);
    if (!inserted) {
      return line_error(
          source, line_number,
          iso_date(*date) + " is already listed on line " + std::to_string(earlier->second) + ".");
    }
    holidays.emplace(*date, std::string(trim(line.substr(10))));
  }
  return MarketStatus(std::move(holidays));
}

bool MarketStatus::is_trading_day(IndiaDate date) const {
  return !is_weekend(date) && !holidays_.contains(date);
}

const std::string* MarketStatus::holiday(IndiaDate date) const {
  const auto found = holidays_.find(date);
  return found == holidays_.end() ? nullptr : &found->second;
}

IndiaDate MarketStatus::first_trading_day_from(IndiaDate date) const {
  // Ends: at most two weekend days in a row, and the holiday list is finite.
  while (!is_trading_day(date)) date = next_day(date);
  return date;
}

MarketPhase MarketStatus::phase(TimePoint time) const {
  const IndiaDate today = india_date(time);
  if (!is_trading_day(today)) return MarketPhase::closed;
  if (time < india_time_point(today, kPreOpenHour, kPreOpenMinute)) return MarketPhase::closed;
  if (time < india_time_point(today, kOpenHour, kOpenMinute)) return MarketPhase::pre_open;
  if (time < india_time_point(today, kCloseHour, kCloseMinute)) return MarketPhase::regular_session;
  return MarketPhase::closed;
}

TimePoint MarketStatus::next_opening(TimePoint time) const {
  const IndiaDate today = india_date(time);
  if (is_trading_day(today) && time < india_time_point(today, kOpenHour, kOpenMinute)) {
    return india_time_point(today, kOpenHour, kOpenMinute);
  }
  return india_time_point(first_trading_day_from(next_day(today)), kOpenHour, kOpenMinute);
}

std::string MarketStatus::describe(TimePoint time) const {
  switch (phase(time)) {
    case MarketPhase::regular_session: return "NSE: open (regular session until 15:30 IST)";
    case MarketPhase::pre_open: return "NSE: pre-open until 09:15 IST";
    case MarketPhase::closed: break;
  }
  const IndiaDate today = india_date(time);
  if (is_trading_day(today) && time < india_time_point(today, kPreOpenHour, kPreOpenMinute)) {
    // On the day itself the pre-open is the next thing the desk will see change.
    return "NSE: closed; opens today at 09:00 IST (pre-open)";
  }
  std::string line = "NSE: closed";
  if (is_weekend(today)) {
    line += " (weekend)";
  } else if (const std::string* name = holiday(today)) {
    line += name->empty() ? " (holiday)" : " (holiday: " + *name + ")";
  } else {
    line += " for the day";
  }
  // For a later day, what planning needs is when trading starts.
  line += "; opens " + format_india_day(india_date(next_opening(time))) + " at 09:15 IST";
  return line;
}

}  // namespace deskd::desk
