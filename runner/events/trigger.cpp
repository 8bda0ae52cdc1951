#include "runner/events/trigger.h"

#include <unistd.h>

#include <boost/json.hpp>
#include <cstdio>

#include "base/random_id.h"

namespace deskd::desk {
namespace {

namespace json = boost::json;
using namespace std::chrono;

constexpr std::size_t kIdRandomBytes = 8;

// Times are written in UTC with only as many fraction digits as they need (none, 3, 6 or
// 9), so a journal stays readable and a nanosecond time_point still comes back exactly.
std::string iso8601_utc(system_clock::time_point time) {
  const auto day = floor<days>(time);
  const year_month_day date{day};
  const hh_mm_ss clock{floor<nanoseconds>(time - day)};
  char text[48];
  int length = std::snprintf(text, sizeof text, "%04d-%02u-%02uT%02d:%02d:%02d",
                             static_cast<int>(date.year()), static_cast<unsigned>(date.month()),
                             static_cast<unsigned>(date.day()), static_cast<int>(clock.hours().count()),
                             static_cast<int>(clock.minutes().count()),
                             static_cast<int>(clock.seconds().count()));
  long long fraction = clock.subseconds().count();
  if (fraction != 0) {
    int digits = 9;
    while (digits > 3 && fraction % 1000 == 0) {
      fraction /= 1000;
      digits -= 3;
    }
    length += std::snprintf(text + length, sizeof text - static_cast<std::size_t>(length), ".%0*lld",
                            digits, fraction);
  }
  return std::string(text, static_cast<std::size_t>(length)) + "Z";
}

// Reads exactly `count` decimal digits at `position`; moves past them.
std::optional<int> read_digits(std::string_view text, std::size_t& position, std::size_t count) {
  if (position + count > text.size()) return std::nullopt;
  int value = 0;
  for (std::size_t index = position; index < position + count; ++index) {
    if (text[index] < '0' || text[index] > '9') return std::nullopt;
    value = value * 10 + (text[index] - '0');
  }
  position += count;
  return value;
}

bool expect(std::string_view text, std::size_t& position, char wanted) {
  if (position >= text.size() || text[position] != wanted) return false;
  ++position;
  return true;
}

// Parses "YYYY-MM-DDTHH:MM:SS[.f{1,9}]Z", the form iso8601_utc writes; nothing looser.
std::optional<system_clock::time_point> parse_iso8601_utc(std::string_view text) {
  std::size_t position = 0;
  const auto year_value = read_digits(text, position, 4);
  if (!year_value || !expect(text, position, '-')) return std::nullopt;
  const auto month_value = read_digits(text, position, 2);
  if (!month_value || !expect(text, position, '-')) return std::nullopt;
  const auto day_value = read_digits(text, position, 2);
  if (!day_value || !expect(text, position, 'T')) return std::nullopt;
  const auto hour = read_digits(text, position, 2);
  if (!hour || !expect(text, position, ':')) return std::nullopt;
  const auto minute = read_digits(text, position, 2);
  if (!minute || !expect(text, position, ':')) return std::nullopt;
  const auto second = read_digits(text, position, 2);
  if (!second) return std::nullopt;
  long long fraction = 0;
  if (expect(text, position, '.')) {
    std::size_t count = 0;
    while (position < text.size() && text[position] >= '0' && text[position] <= '9' && count < 9) {
      fraction = fraction * 10 + (text[position++] - '0');
      ++count;
    }
    if (count == 0) return std::nullopt;
    for (; count < 9; ++count) fraction *= 10;
  }
  if (!expect(text, position, 'Z') || position != text.size()) return std::nullopt;
  const year_month_day date{year{*year_value}, month{static_cast<unsigned>(*month_value)},
                            day{static_cast<unsigned>(*day_value)}};
  if (!date.ok() || *hour > 23 || *minute > 59 || *second > 59) return std::nullopt;
  return time_point_cast<system_clock::duration>(sys_days{date} + hours{*hour} + minutes{*minute} +
                                                seconds{*second} + nanoseconds{fraction});
}

Error bad_field(std::string_view field, std::string_view wanted) {
  return Error::make(ErrorCode::invalid_argument, "The trigger's \"" + std::string(field) +
                                                      "\" is missing or is not " +
                                                      std::string(wanted) + ".");
}

Result<std::string> string_field(const json::object& object, std::string_view field) {
  const json::value* value = object.if_contains(field);
  if (value == nullptr || !value->is_string()) return bad_field(field, "a string");
  return std::string(value->get_string());
}

Result<bool> bool_field(const json::object& object, std::string_view field) {
  const json::value* value = object.if_contains(field);
  if (value == nullptr || !value->is_bool()) return bad_field(field, "true or false");
  return value->get_bool();
}

}  // namespace

std::string make_trigger_id() { return "t-" + random_hex(kIdRandomBytes); }

Trigger::Kind kind_of_text(const std::string& text) {
  return !text.empty() && text.front() == '/' ? Trigger::Kind::command : Trigger::Kind::message;
}

json::object to_json(const Trigger& trigger) {
  json::object object;
  object["id"] = trigger.id;
  object["desk"] = trigger.desk;
  object["source"] = trigger.source == Trigger::Source::schedule ? "schedule" : "user";
  object["text"] = trigger.text;
  object["sender"] = trigger.sender;
  object["schedule"] = trigger.schedule;
  object["received"] = iso8601_utc(trigger.received);
  if (trigger.due) object["due"] = iso8601_utc(*trigger.due);
  object["redelivered"] = trigger.redelivered;
  object["queued_explicitly"] = trigger.queued_explicitly;
  if (trigger.kind) object["kind"] = *trigger.kind == Trigger::Kind::command ? "command" : "message";
  return object;
}

Result<Trigger> trigger_from_json(const json::object& object) {
  Trigger trigger;
  DESKD_ASSIGN_OR_RETURN(trigger.id, string_field(object, "id"));
  if (trigger.id.empty()) return bad_field("id", "a non-empty string");
  DESKD_ASSIGN_OR_RETURN(trigger.desk, string_field(object, "desk"));
  if (trigger.desk.empty()) return bad_field("desk", "a non-empty string");
  DESKD_ASSIGN_OR_RETURN(const std::string source, string_field(object, "source"));
  if (source == "user") {
    trigger.source = Trigger::Source::user;
  } else if (source == "schedule") {
    trigger.source = Trigger::Source::schedule;
  } else {
    return bad_field("source", "\"user\" or \"schedule\"");
  }
  DESKD_ASSIGN_OR_RETURN(trigger.text, string_field(object, "text"));
  DESKD_ASSIGN_OR_RETURN(trigger.sender, string_field(object, "sender"));
  DESKD_ASSIGN_OR_RETURN(trigger.schedule, string_field(object, "schedule"));
  DESKD_ASSIGN_OR_RETURN(const std::string received, string_field(object, "received"));
  const auto time = parse_iso8601_utc(received);
  if (!time) return bad_field("received", "a UTC time such as 2026-11-30T03:44:05.123Z");
  trigger.received = *time;
  if (object.contains("due")) {
    DESKD_ASSIGN_OR_RETURN(const std::string due, string_field(object, "due"));
    trigger.due = parse_iso8601_utc(due);
    if (!trigger.due) return bad_field("due", "a UTC time such as 2026-11-30T03:44:05Z");
  }
  DESKD_ASSIGN_OR_RETURN(trigger.redelivered, bool_field(object, "redelivered"));
  DESKD_ASSIGN_OR_RETURN(trigger.queued_explicitly, bool_field(object, "queued_explicitly"));
  if (object.contains("kind")) {
    DESKD_ASSIGN_OR_RETURN(const std::string kind, string_field(object, "kind"));
    if (kind == "command") {
      trigger.kind = Trigger::Kind::command;
    } else if (kind == "message") {
      trigger.kind = Trigger::Kind::message;
    } else {
      return bad_field("kind", "\"command\" or \"message\"");
    }
  }
  return trigger;
}

}  // namespace deskd::desk
