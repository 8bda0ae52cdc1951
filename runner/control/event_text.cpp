#include "runner/control/event_text.h"

#include <boost/json.hpp>

namespace deskd::control {

namespace json = boost::json;

namespace {

std::string string_of(const json::object& object, const char* key) {
  const json::value* value = object.if_contains(key);
  if (value == nullptr) return {};
  if (value->is_string()) return std::string(value->as_string());
  return json::serialize(*value);
}

// At most `lines` lines of `text`, each indented, with "..." when some were left out.
std::string indented(std::string text, std::size_t lines) {
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

// A tool call's input, short: bash shows its command, file tools their path.
std::string tool_input(const json::object& data) {
  const json::value* input = data.if_contains("input");
  if (input == nullptr || !input->is_object()) return {};
  const json::object& object = input->as_object();
  for (const char* key : {"command", "path", "job_id"}) {
    if (const json::value* value = object.if_contains(key); value != nullptr && value->is_string()) {
      std::string text(value->as_string());
      if (text.size() > 200) text = text.substr(0, 200) + "...";
      return text;
    }
  }
  return json::serialize(object);
}

}  // namespace

std::string event_text(const json::object& event, bool everything) {
  const std::string kind = string_of(event, "kind");
  const std::string time_stamp = string_of(event, "time");
  const std::string prefix =
      "[" + (time_stamp.size() >= 19 ? time_stamp.substr(11, 8) : time_stamp) + "] " + string_of(event, "desk") + ": ";
  static const json::object kEmpty;
  const json::value* data_value = event.if_contains("data");
  const json::object& data = data_value != nullptr && data_value->is_object() ? data_value->as_object() : kEmpty;

  if (kind == "MODEL_TEXT") return prefix + string_of(data, "text") + "\n";
  if (kind == "TOOL_CALLED") return prefix + "> " + string_of(data, "tool") + " " + tool_input(data) + "\n";
  if (kind == "TOOL_FINISHED") {
    const json::value* failed = data.if_contains("is_error");
    const bool is_error = failed != nullptr && failed->is_bool() && failed->as_bool();
    return (is_error ? std::string("  refused or failed:\n") : std::string()) + indented(string_of(data, "text"), 12);
  }
  if (kind == "TURN_STARTED") return prefix + "turn started\n";
  if (kind == "TURN_FINISHED") return prefix + "turn finished: " + string_of(data, "reply") + "\n";
  if (kind == "TURN_FAILED") return prefix + "turn failed: " + string_of(data, "error") + "\n";
  if (kind == "TURN_STOPPED") return prefix + "turn stopped (" + string_of(data, "reason") + ")\n";
  if (kind == "COMMAND_ANSWERED") return prefix + string_of(data, "command") + ":\n" + indented(string_of(data, "reply"), 1000);
  if (kind == "STEERING_QUEUED") return prefix + "message queued for the running turn's next tool round\n";
  if (kind == "STEERING_DELIVERED") return prefix + "message delivered to the running turn\n";
  if (kind == "PROPOSAL_ACCEPTED" || kind == "PROPOSAL_REJECTED") {
    return prefix + "proposal " + string_of(data, "proposal") + (kind == "PROPOSAL_ACCEPTED" ? " accepted" : " rejected") +
           " by " + string_of(data, "by") + " (" + string_of(data, "path") + ")\n";
  }
  if (kind == "PROPOSAL_REFUSED") return prefix + "proposal " + string_of(data, "proposal") + " refused: " + string_of(data, "error") + "\n";
  if (kind == "SCHEDULE_MISSED") {
    return prefix + "schedule " + string_of(data, "schedule") + " missed: " + string_of(data, "reason") + "\n";
  }
  if (kind == "MODEL_RETRYING") return prefix + "the model call failed and is retried: " + string_of(data, "reason") + "\n";
  if (kind == "SESSION_COMPACTED") {
    return prefix + "the session was compacted: " + string_of(data, "messages_summarised") + " older messages summarised\n";
  }
  if (kind == "NETWORK_REFUSED") {
    const json::value* port = data.if_contains("port");
    return prefix + "network refused " + string_of(data, "host") + ":" + (port != nullptr ? json::serialize(*port) : "?") +
           ": " + string_of(data, "why") + "\n";
  }
  if (kind == "DESK_FAILED") return prefix + "desk failed: " + string_of(data, "error") + "\n";
  if (kind == "DESK_STARTED" || kind == "DESK_STOPPED") return prefix + (kind == "DESK_STARTED" ? "desk started\n" : "desk stopped\n");
  if (kind == "SESSION_ROLLED_OVER") return prefix + "new session (" + string_of(data, "reason") + ")\n";
  if (!everything) return {};
  return prefix + kind + " " + json::serialize(data) + "\n";
}

}  // namespace deskd::control
