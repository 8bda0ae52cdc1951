#pragma once
// Internal to runner/deskctl: the two commands that follow a desk's events rather than read
// one reply — ask (a follow, a send, then the turn it started until it ends) and events.

#include "runner/deskctl/control_client.h"
#include "runner/deskctl/deskctl.h"

namespace deskd::control::deskctl {

/// `deskctl ask DESK TEXT...`: returns kOk, kReplyCut, kRefused (refused, the turn failed or
/// was stopped, the desk stopped) or kUnreachable.
int ask(ControlClient& client, const DeskctlRequest& options);

/// `deskctl events [DESK] [--follow] [--from EVENT_ID]`.
int events(ControlClient& client, const DeskctlRequest& options);

}  // namespace deskd::control::deskctl
