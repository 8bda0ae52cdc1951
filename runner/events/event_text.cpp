#include "runner/events/event_text.h"

#include <boost/json.hpp>

#include "base/terminal_text.h"
#include "runner/events/event_kinds.h"
#include "runner/events/india_time.h"

namespace deskd::desk {

namespace json = boost::json;

namespace {

std::string string_of(const json::object& object, std::string_view key) {
  const json::value* value = object.if_contains(key);
  if (value == nullptr) return {};
  if (value->is_string()) return std::string(value->as_string());
  return json::serialize(*value);
}

// At most `lines` lines of `text`, each indented, with "..." when some were left out; what a
// terminal would obey is escaped (the lines themselves are kept).
std::string indented(std::string text, std::size_t lines) {
  text = terminal_text(text, LineBreaks::kept);
  while (!text.empty() && text.back() == '\n') text.pop_back();
  std::string out = "    ";
  std::size_t line = 0;
  for (std::size_t index = 0; index < text.size(); ++index) {
    if (text[index] == '\n') {
      if (++line == lines) {
        out += "\n    ...";
        break;
      }
      out += "\n    ";
    } else {
      out += text[index];
    }
  }
  return out + "\n";
}

// A tool call's input, short and on one line: bash shows its command, file tools their path
// (quoted when it holds anything unusual), others their JSON.
std::string tool_input(const json::value* input) {
  if (input == nullptr || !input->is_object()) return {};
  const json::object& object = input->as_object();
  for (const std::string_view key : {"command", "path", "job_id", "task"}) {
    if (const json::value* value = object.if_contains(key); value != nullptr && value->is_string()) {
      std::string_view text(value->as_string());
      if (key == "path") return terminal_path(text);
      if (text.size() <= 200) return terminal_text(text);
      std::size_t cut = 200;  // between characters, so that no half of one is shown escaped
      while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;
      return terminal_text(text.substr(0, cut)) + "...";
    }
  }
  return terminal_text(json::serialize(object));
}

// One "{field}" or "{field:filter argument}" of a template (runner/events/event_kinds.h). A
// field's text is the desk's to choose, so it is shown, never obeyed: escaped on one line,
// with its lines kept (prose, lines N), or as a quoted path.
std::string placeholder(std::string_view inside, const json::object& data, const std::string& at) {
  if (inside == "at") return at;
  const std::size_t colon = inside.find(':');
  const std::string_view field = inside.substr(0, colon);
  if (colon == std::string_view::npos) return terminal_text(string_of(data, field));
  const std::string_view filter = inside.substr(colon + 1);
  if (filter == "short") return tool_input(data.if_contains(field));
  if (filter == "prose") return terminal_text(string_of(data, field), LineBreaks::kept);
  if (filter == "path") return terminal_path(string_of(data, field));
  if (filter.starts_with("lines ")) {
    std::size_t lines = 0;
    for (char digit : filter.substr(6)) lines = lines * 10 + static_cast<std::size_t>(digit - '0');
    return indented(string_of(data, field), lines);
  }
  if (filter.starts_with("given ")) {  // TEXT, with % as the field, when the field is there
    const std::string value = terminal_text(string_of(data, field));
    if (value.empty()) return {};
    std::string text(filter.substr(6));
    if (const std::size_t mark = text.find('%'); mark != std::string::npos) text.replace(mark, 1, value);
    return text;
  }
  if (filter.starts_with("if ")) {
    const json::value* flag = data.if_contains(field);
    return flag != nullptr && flag->is_bool() && flag->as_bool() ? std::string(filter.substr(3)) : std::string();
  }
  return terminal_text(string_of(data, field));
}

}  // namespace

std::string event_text(const json::object& event, bool everything) {
  const std::string kind = string_of(event, "kind");
  static const json::object kEmpty;
  const json::value* data_value = event.if_contains("data");
  const json::object& data = data_value != nullptr && data_value->is_object() ? data_value->as_object() : kEmpty;
  const std::string time_stamp = string_of(event, "time");
  // A subagent's events are told under the desk with the subagent's id.
  const std::string subagent = string_of(data, "subagent");
  const std::string at = "[" + terminal_text(readable_india_clock(time_stamp)) + "] " +
                         terminal_text(string_of(event, "desk")) + (subagent.empty() ? "" : "/" + terminal_text(subagent)) + ": ";

  const auto row = desk::find_event_kind(kind);
  // A probe a library makes on purpose (REFUSED with "probe": glibc's nscd socket at bash's
  // start) is kept in the journal and listed by `deskctl refusals`, but not told to a person
  // following: it happens in every desk and means nothing.
  const json::value* probe = data.if_contains("probe");
  const bool quiet = probe != nullptr && probe->is_bool() && probe->as_bool();
  if (!row || row->text.empty() || (quiet && !everything)) {
    if (!everything) return {};
    return at + terminal_text(kind) + " " + terminal_text(json::serialize(data)) + "\n";
  }
  std::string text;
  const std::string_view pattern = row->text;
  for (std::size_t index = 0; index < pattern.size();) {
    const std::size_t open = pattern.find('{', index);
    if (open == std::string_view::npos) {
      text += pattern.substr(index);
      break;
    }
    text += pattern.substr(index, open - index);
    const std::size_t close = pattern.find('}', open);
    if (close == std::string_view::npos) {  // a broken template (the table's test refuses one)
      text += pattern.substr(open);
      break;
    }
    text += placeholder(pattern.substr(open + 1, close - open - 1), data, at);
    index = close + 1;
  }
  if (text.empty() || text.back() != '\n') text += '\n';
  return text;
}

}  // namespace deskd::desk
