#pragma once
// The one way a control request is answered, whichever listener read it: the control
// socket's connections and the web server's POST /api/op (runner/web) both hand a parsed
// request here, so there is one op table and one set of permission checks. Follows are the
// listener's own (a control connection streams lines, the web server SSE); this says so
// and replies nothing for them.

#include <functional>
#include <string>

#include "runner/control_protocol/control_protocol.h"

namespace deskd::control {

class ControlService;

/// Who asks: the sender as the server knows it (from SO_PEERCRED, or the web login), and
/// whether that is the operator (root or deskd's own uid), whom operator-only ops need.
struct ControlCaller {
  std::string sender;
  bool privileged = false;
};

/// What dispatch_control_request did.
enum class Dispatched {
  answered,  ///< `reply` was or will be called once, with one reply line
  follow,    ///< a follow: the listener streams it; nothing was replied
  unfollow,  ///< an unfollow: the listener ends one; nothing was replied
};

/// Answers `parsed` for `caller`: a parse problem, an unknown desk, an operator-only op
/// asked by someone else, or the op's handler. `reply` gets the reply line (without a
/// newline) now or, for a send or a reload, later on the event loop. A handler's exception
/// becomes an internal error reply. Never throws.
Dispatched dispatch_control_request(ControlService& service, const ParsedRequest& parsed, const ControlCaller& caller,
                                    std::function<void(std::string)> reply);

}  // namespace deskd::control
