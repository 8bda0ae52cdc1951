#include "runner/control/control_dispatch.h"

#include <boost/json.hpp>

#include "runner/control/control_ops.h"
#include "runner/control/control_service.h"

namespace deskd::control {

namespace json = boost::json;

namespace {

// The reply code for a service error.
std::string_view reply_code_for(const Error& error) {
  switch (error.code) {
    case ErrorCode::not_found: return code::kNotFound;
    case ErrorCode::refused: return code::kRefused;
    case ErrorCode::invalid_argument: return code::kBadRequest;
    default: return code::kInternal;
  }
}

std::string reply_line(const json::value& id, Result<json::object> answered) {
  if (answered.ok()) return reply_ok(id, std::move(answered).value());
  return reply_error(id, reply_code_for(answered.error()), answered.error().what);
}

}  // namespace

Dispatched dispatch_control_request(ControlService& service, const ParsedRequest& parsed, const ControlCaller& caller,
                                    std::function<void(std::string)> reply) {
  const ControlRequest& request = parsed.request;
  if (parsed.problem) {
    reply(reply_error(request.id, parsed.problem_code, *parsed.problem));
    return Dispatched::answered;
  }
  if (request.desk && !request.desk->empty() && !service.has_desk(*request.desk)) {
    reply(reply_error(request.id, code::kUnknownDesk, "There is no desk '" + *request.desk + "'."));
    return Dispatched::answered;
  }
  // The parser let through only operations of the table.
  const ControlOp& operation = *find_control_op(request.op);
  if (operation.operator_only && !caller.privileged) {
    reply(
        reply_error(request.id, code::kNotAllowed,
                    "Only root and deskd's own user may ask for '" + request.op + "'; " + caller.sender + " may not."));
    return Dispatched::answered;
  }
  try {
    switch (operation.how) {
      case OpAnswer::now: reply(reply_line(request.id, operation.answer(service, request, caller.sender))); break;
      case OpAnswer::later:
        // A send is answered once its trigger is journaled and flushed, a reload once it is
        // done however long its desks' turns take to end.
        operation.answer_later(
            service, request, caller.sender,
            [reply, id = request.id](Result<json::object> answered) { reply(reply_line(id, std::move(answered))); });
        break;
      case OpAnswer::follow: return Dispatched::follow;
      case OpAnswer::unfollow: return Dispatched::unfollow;
    }
  } catch (const std::exception& error) {
    // A service bug must cost one reply, never the daemon.
    reply(reply_error(request.id, code::kInternal, std::string("deskd failed to answer: ") + error.what()));
  }
  return Dispatched::answered;
}

}  // namespace deskd::control
