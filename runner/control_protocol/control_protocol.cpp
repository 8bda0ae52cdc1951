#include "runner/control_protocol/control_protocol.h"

#include <boost/json.hpp>

#include <algorithm>

namespace deskd::control {

namespace json = boost::json;

namespace {

#define DESKD_CONTROL_OPERATION_ROW(constant, name, needs) op::constant,
constexpr Operation kOperations[] = {DESKD_CONTROL_OPERATIONS(DESKD_CONTROL_OPERATION_ROW)};
#undef DESKD_CONTROL_OPERATION_ROW

// "desks, status, ... and reload", for the unknown-operation error.
std::string operation_names() {
  std::string text;
  const std::size_t count = std::size(kOperations);
  for (std::size_t index = 0; index < count; ++index) {
    text += (index == 0 ? "" : index + 1 == count ? " and " : ", ") + std::string(kOperations[index].name);
  }
  return text;
}

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

std::span<const Operation> operations() { return kOperations; }

const Operation* find_operation(std::string_view name) {
  const auto* found = std::find_if(std::begin(kOperations), std::end(kOperations),
                                   [&](const Operation& operation) { return operation.name == name; });
  return found == std::end(kOperations) ? nullptr : found;
}

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
  if (const json::value* id = object.if_contains(field::kId)) parsed.request.id = *id;
  const json::value* operation = object.if_contains(field::kOp);
  if (operation == nullptr || !operation->is_string()) {
    parsed.problem = "The request needs an 'op' string.";
    return parsed;
  }
  parsed.request.op = std::string(operation->as_string());
  const Operation* operation_row = find_operation(parsed.request.op);
  if (operation_row == nullptr) {
    parsed.problem_code = std::string(code::kUnknownOperation);
    parsed.problem =
        "Unknown operation '" + parsed.request.op.substr(0, 100) + "'; the operations are " + operation_names() + ".";
    return parsed;
  }
  ControlRequest& request = parsed.request;
  if (!take_string(object, field::kDesk, request.desk, parsed.problem) ||
      !take_string(object, field::kText, request.text, parsed.problem) ||
      !take_string(object, field::kFrom, request.from, parsed.problem) ||
      !take_string(object, field::kProposal, request.proposal, parsed.problem) ||
      !take_string(object, field::kApproval, request.approval, parsed.problem) ||
      !take_string(object, field::kSince, request.since, parsed.problem)) {
    return parsed;
  }
  if (const json::value* follow = object.if_contains(field::kFollow)) request.follow = *follow;
  if (const json::value* replay = object.if_contains(field::kReplay)) {
    if (!replay->is_bool()) {
      parsed.problem = "'replay' must be true or false.";
      return parsed;
    }
    request.replay = replay->as_bool();
  }
  if (const json::value* verify = object.if_contains(field::kVerify)) {
    if (!verify->is_bool()) {
      parsed.problem = "'verify' must be true or false.";
      return parsed;
    }
    request.verify = verify->as_bool();
  }
  if (const json::value* add = object.if_contains(field::kAddUsd)) {
    // The amount's sense (positive, not absurd) is the budget keeper's to judge; here only its type.
    if (!add->is_number()) {
      parsed.problem = "'add_usd' must be a number of US dollars.";
      return parsed;
    }
    request.add_usd = add->to_number<double>();
  }
  // What each operation needs, checked here (as its row in the table says) so that every
  // handler can rely on it.
  const auto needs = [&](const std::optional<std::string>& given, std::string_view name) {
    if (!parsed.problem && (!given || given->empty())) {
      parsed.problem = "'" + request.op + "' needs a non-empty '" + std::string(name) + "'.";
    }
  };
  if ((operation_row->needs & kNeedsDesk) != 0) needs(request.desk, field::kDesk);
  if ((operation_row->needs & kNeedsText) != 0) needs(request.text, field::kText);
  if ((operation_row->needs & kNeedsProposal) != 0) needs(request.proposal, field::kProposal);
  if ((operation_row->needs & kNeedsApproval) != 0) needs(request.approval, field::kApproval);
  if ((operation_row->needs & kNeedsFollow) != 0 && !parsed.problem && !request.follow) {
    parsed.problem = "'" + request.op + "' needs 'follow': the id of the follow request to end.";
  }
  if (request.op == op::kSend.name) {
    if (!parsed.problem && request.text->size() > kMaximumSendTextBytes) {
      parsed.problem_code = std::string(code::kTooLarge);
      parsed.problem = "The message is " + std::to_string(request.text->size()) +
                       " bytes; deskd takes messages of at most " + std::to_string(kMaximumSendTextBytes) +
                       " bytes (256 KiB). Save a long text to a file the desk can read and send its path instead.";
    }
  }
  return parsed;
}

std::string reply_ok(const json::value& id, json::object fields) {
  json::object reply;
  reply[field::kId] = id;
  reply[field::kOk] = true;
  for (auto& field : fields) reply[field.key()] = std::move(field.value());
  return json::serialize(reply);
}

std::string reply_error(const json::value& id, std::string_view error_code, std::string_view message) {
  return json::serialize(
      json::object{{field::kId, id}, {field::kOk, false}, {field::kCode, error_code}, {field::kError, message}});
}

std::string reply_event(const json::value& id, const json::object& event) {
  return json::serialize(json::object{{field::kId, id}, {field::kEvent, event}});
}

}  // namespace deskd::control
