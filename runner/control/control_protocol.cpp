#include "runner/control/control_protocol.h"

#include <boost/json.hpp>

#include "runner/control/control_ops.h"

namespace deskd::control {

namespace json = boost::json;

namespace {

// Reads an optional string member; a present member of another type is a problem.
bool take_string(const json::object& object, std::string_view key, std::optional<std::string>& out,
                 std::optional<std::string>& problem) {
  const json::value* value = object.if_contains(key);
  if (value == nullptr || value->is_null()) return true;
  if (!value->is_string()) {
    problem = "'" + std::string(key) + "' must be a string.";
    return false;
  }
  out = std::string(value->as_string());
  return true;
}

}  // namespace

ParsedRequest parse_control_request(std::string_view line) {
  ParsedRequest parsed;
  boost::system::error_code error;
  json::value value = json::parse(line, error);
  if (error) {
    parsed.problem = "The request is not JSON: " + error.message() + ".";
    return parsed;
  }
  if (!value.is_object()) {
    parsed.problem = "The request must be a JSON object.";
    return parsed;
  }
  const json::object& object = value.as_object();
  if (const json::value* id = object.if_contains("id")) parsed.request.id = *id;
  const json::value* operation = object.if_contains("op");
  if (operation == nullptr || !operation->is_string()) {
    parsed.problem = "The request needs an 'op' string.";
    return parsed;
  }
  parsed.request.op = std::string(operation->as_string());
  const ControlOp* operation_row = find_control_op(parsed.request.op);
  if (operation_row == nullptr) {
    parsed.problem_code = std::string(code::kUnknownOperation);
    parsed.problem =
        "Unknown operation '" + parsed.request.op.substr(0, 100) + "'; the operations are " + control_op_names() + ".";
    return parsed;
  }
  ControlRequest& request = parsed.request;
  if (!take_string(object, "desk", request.desk, parsed.problem) ||
      !take_string(object, "text", request.text, parsed.problem) ||
      !take_string(object, "from", request.from, parsed.problem) ||
      !take_string(object, "proposal", request.proposal, parsed.problem)) {
    return parsed;
  }
  if (const json::value* follow = object.if_contains("follow")) request.follow = *follow;
  if (const json::value* replay = object.if_contains("replay")) {
    if (!replay->is_bool()) {
      parsed.problem = "'replay' must be true or false.";
      return parsed;
    }
    request.replay = replay->as_bool();
  }
  // What each operation needs, checked here (as its row in the table says) so that every
  // handler can rely on it.
  const auto needs = [&](const std::optional<std::string>& field, const char* name) {
    if (!parsed.problem && (!field || field->empty())) {
      parsed.problem = "'" + request.op + "' needs a non-empty '" + name + "'.";
    }
  };
  if ((operation_row->needs & kNeedsDesk) != 0) needs(request.desk, "desk");
  if ((operation_row->needs & kNeedsText) != 0) needs(request.text, "text");
  if ((operation_row->needs & kNeedsProposal) != 0) needs(request.proposal, "proposal");
  if ((operation_row->needs & kNeedsFollow) != 0 && !parsed.problem && !request.follow) {
    parsed.problem = "'" + request.op + "' needs 'follow': the id of the follow request to end.";
  }
  if (request.op == op::kSend) {
    if (!parsed.problem && request.text->size() > kMaximumSendTextBytes) {
      parsed.problem_code = std::string(code::kTooLarge);
      parsed.problem = "The message is " + std::to_string(request.text->size()) + " bytes; deskd takes messages of at most " +
                       std::to_string(kMaximumSendTextBytes) +
                       " bytes (256 KiB). Save a long text to a file the desk can read and send its path instead.";
    }
  }
  return parsed;
}

std::string reply_ok(const json::value& id, json::object fields) {
  json::object reply;
  reply["id"] = id;
  reply["ok"] = true;
  for (auto& field : fields) reply[field.key()] = std::move(field.value());
  return json::serialize(reply);
}

std::string reply_error(const json::value& id, std::string_view error_code, std::string_view message) {
  return json::serialize(json::object{{"id", id}, {"ok", false}, {"code", error_code}, {"error", message}});
}

std::string reply_event(const json::value& id, const json::object& event) {
  return json::serialize(json::object{{"id", id}, {"event", event}});
}

}  // namespace deskd::control
