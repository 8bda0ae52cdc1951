#include "runner/journal/journal_salvage.h"

#include <boost/json.hpp>

#include "runner/events/event.h"

namespace deskd::desk {
namespace {

namespace json = boost::json;

// The keys a salvage looks for: the event's own, and those of the data of the kinds that
// name a trigger (their data is flat, so a key there is never one of a nested object).
constexpr std::string_view kEventKeys[] = {"id", "time", "desk", "kind"};
constexpr std::string_view kDataKeys[] = {"id", "trigger", "desk", "source", "text", "sender", "schedule", "kind"};

struct StringLiteral {
  std::string value;
  bool whole = false;
};

// The JSON string starting at the quote at `start`: decoded when its closing quote is
// there, otherwise what survived of it (escapes decoded as far as they are whole).
StringLiteral read_string(std::string_view line, std::size_t start) {
  std::size_t end = start + 1;
  while (end < line.size() && line[end] != '"') end += line[end] == '\\' ? 2 : 1;
  boost::system::error_code error;
  if (end < line.size()) {
    const json::value value = json::parse(line.substr(start, end - start + 1), error);
    if (!error && value.is_string()) return {std::string(value.get_string()), true};
    return {std::string(line.substr(start + 1, end - start - 1)), false};
  }
  // Cut off: drop a half escape at the end, then close the string to decode the rest.
  std::string_view rest = line.substr(start, std::min(end, line.size()) - start);
  const std::size_t escape = rest.rfind('\\');
  if (escape != std::string_view::npos && rest.size() - escape < 6) rest = rest.substr(0, escape);
  const json::value value = json::parse(std::string(rest) + "\"", error);
  if (!error && value.is_string()) return {std::string(value.get_string()), false};
  return {std::string(rest.substr(1)), false};
}

// Reads "key":"..." pairs for `keys` in line[from, to).
template <typename Keys>
void read_keys(std::string_view line, std::size_t from, std::size_t to, const Keys& keys,
               std::map<std::string, std::string, std::less<>>& whole,
               std::map<std::string, std::string, std::less<>>* cut) {
  for (std::string_view key : keys) {
    const std::string pattern = "\"" + std::string(key) + "\":\"";
    const std::size_t found = line.substr(0, to).find(pattern, from);
    if (found == std::string_view::npos) continue;
    StringLiteral literal = read_string(line, found + pattern.size() - 1);
    if (literal.whole) {
      whole.emplace(std::string(key), std::move(literal.value));
    } else if (cut != nullptr) {
      cut->emplace(std::string(key), std::move(literal.value));
    }
  }
}

}  // namespace

std::string SalvagedLine::trigger() const {
  const auto named = data.find("trigger");
  if (named != data.end()) return named->second;
  if (kind != event_kind::kTriggerAccepted) return {};
  const auto id = data.find("id");
  return id != data.end() ? id->second : std::string();
}

SalvagedLine salvage_text(std::string_view line) {
  SalvagedLine salvaged;
  constexpr std::string_view kData = "\"data\":{";
  const std::size_t data = line.find(kData);
  const std::size_t event_end = data == std::string_view::npos ? line.size() : data;
  std::map<std::string, std::string, std::less<>> event_fields;
  read_keys(line, 0, event_end, kEventKeys, event_fields, nullptr);
  salvaged.event_id = event_fields["id"];
  salvaged.time = event_fields["time"];
  salvaged.desk = event_fields["desk"];
  salvaged.kind = event_fields["kind"];
  if (data != std::string_view::npos) {
    read_keys(line, data + kData.size(), line.size(), kDataKeys, salvaged.data, &salvaged.cut_data);
  }
  return salvaged;
}

SalvagedLine salvage_object(const json::object& object) {
  SalvagedLine salvaged;
  const auto text_of = [](const json::object& from, std::string_view key) {
    const json::value* value = from.if_contains(key);
    return value != nullptr && value->is_string() ? std::string(value->get_string()) : std::string();
  };
  salvaged.event_id = text_of(object, "id");
  salvaged.time = text_of(object, "time");
  salvaged.desk = text_of(object, "desk");
  salvaged.kind = text_of(object, "kind");
  const json::value* data = object.if_contains("data");
  if (data != nullptr && data->is_object()) {
    for (std::string_view key : kDataKeys) {
      const json::value* value = data->get_object().if_contains(key);
      if (value != nullptr && value->is_string()) salvaged.data.emplace(std::string(key), std::string(value->get_string()));
    }
  }
  return salvaged;
}

std::optional<Trigger> salvaged_trigger(const SalvagedLine& line) {
  const auto field = [&](std::string_view key) -> const std::string* {
    const auto found = line.data.find(key);
    return found != line.data.end() ? &found->second : nullptr;
  };
  const std::string* id = field("id");
  const std::string* text = field("text");
  if (line.kind != event_kind::kTriggerAccepted || id == nullptr || id->empty() || text == nullptr) return std::nullopt;
  Trigger trigger;
  trigger.id = *id;
  trigger.text = *text;
  const std::string* desk = field("desk");
  trigger.desk = desk != nullptr && !desk->empty() ? *desk : line.desk;
  const std::string* source = field("source");
  trigger.source = source != nullptr && *source == "schedule" ? Trigger::Source::schedule : Trigger::Source::user;
  if (const std::string* sender = field("sender")) trigger.sender = *sender;
  if (const std::string* schedule = field("schedule")) trigger.schedule = *schedule;
  if (const std::string* kind = field("kind")) {
    if (*kind == "command") trigger.kind = Trigger::Kind::command;
    if (*kind == "message") trigger.kind = Trigger::Kind::message;
  }
  return trigger;
}

}  // namespace deskd::desk
