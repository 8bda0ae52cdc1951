#pragma once
// Internal to runner/control: the server's table of control-socket operations — each
// operation of the protocol (runner/control_protocol: its name and the request fields it
// needs, checked when the line is parsed) and how it is answered:
// most by a handler that asks the ControlService and builds the reply from the values it
// returns; send and reload by a handler that answers later (once the trigger is flushed, once
// the reload is done); follow and unfollow by the connection's streams. A new operation
// is a row in the protocol's list, a row here with its handler (and the ControlService
// call it makes), a row in deskctl's table, and their tests.

#include <boost/json/object.hpp>

#include <functional>
#include <span>
#include <string>
#include <string_view>

#include "base/result.h"
#include "runner/control/control_values.h"
#include "runner/control_protocol/control_protocol.h"

namespace deskd::control {

class ControlService;

/// How an operation is answered.
enum class OpAnswer {
  now,       ///< `answer` gives the reply's fields (or the error)
  later,     ///< `answer_later` calls back with the reply's fields once the service is done
  follow,    ///< the connection starts a stream of events
  unfollow,  ///< the connection ends one
};

struct ControlOp {
  Operation operation;  ///< the protocol's: its name and the fields it needs
  OpAnswer how;
  /// For `now`: asks the service on behalf of `sender` and builds the reply's fields.
  Result<boost::json::object> (*answer)(ControlService& service, const ControlRequest& request,
                                        const std::string& sender);
  /// For `later`: asks the service on behalf of `sender`; `done` gets the reply's fields (or
  /// the error) on the event loop once the service has answered.
  void (*answer_later)(ControlService& service, const ControlRequest& request, const std::string& sender,
                       std::function<void(Result<boost::json::object>)> done);
  /// Only root and deskd's own uid may ask (control_dispatch.cpp checks it).
  bool operator_only = false;
};

/// Every operation, in the protocol's order.
std::span<const ControlOp> control_ops();
/// The operation called `name`, or nullptr.
const ControlOp* find_control_op(std::string_view name);

/// The reply fields of a finished reload.
boost::json::object reload_reply(const ReloadOutcome& outcome);

}  // namespace deskd::control
