#pragma once
// How a sandbox with network "allowlist" reaches the outside without ever holding a host
// socket. The sandbox keeps its own network namespace with only `lo`. Its init starts a
// small forwarder (sandbox/init/egress_forwarder.c) listening on 127.0.0.1:kEgressProxyPort
// inside that namespace; each connection it accepts is handed, as a descriptor (SCM_RIGHTS),
// over a relay socket to deskd's egress proxy (runner/egress/), which speaks HTTP proxy to it
// and decides what may be reached. The desk's tools find the proxy through the usual
// variables (egress_proxy_environment).

#include <cstdint>
#include <string>
#include <vector>

#include "base/result.h"
#include "base/unique_fd.h"
#include "sandbox/child_failure.h"
#include "sandbox/init/init_protocol.h"

namespace deskd::sandbox {

struct SandboxSpec;

/// The port of the desk's proxy on its own loopback: the conventional HTTP proxy port.
inline constexpr std::uint16_t kEgressProxyPort = 3128;

/// Gives each launch of an "allowlist" sandbox its relay: one end of a fresh
/// SOCK_SEQPACKET socketpair, whose other end the proxy reads (one accepted TCP connection
/// per message). Safe to call from any thread.
class EgressRelaySource {
 public:
  virtual ~EgressRelaySource() = default;
  virtual Result<UniqueFd> open_relay() = 0;
};

/// What a launch does for network = "allowlist", made before the clone as plan_mounts
/// makes the mount plan, then carried out a step at a time: the parent passes `relay` to
/// deskd-init as the command's last descriptor and drops its own copy once the child is
/// made; deskd-init's forwarder listens on `listeners` besides the proxy's port; the child
/// lowers the sandbox's unprivileged port start for it (let_forwarder_bind_ports). Empty
/// (no relay) for every other sandbox.
struct EgressPlan {
  UniqueFd relay;
  /// The forwarder's other listeners: each allowed name's address, on each of its ports.
  std::vector<deskd_egress_listener> listeners;
  /// The lowest allowed port below 1024, which the forwarder must bind without a
  /// capability; -1 when none is.
  int unprivileged_port_start = -1;
};

/// The egress plan of a sandbox of `spec`; `runs_command` is false for the file opener,
/// which reaches no network. Opens the relay. Errors, as the launch reports them: network
/// "allowlist" without deskd's egress proxy (unsupported), a relay that could not be opened.
Result<EgressPlan> plan_egress(const SandboxSpec& spec, bool runs_command);

/// Child, before the mount plan makes /proc/sys read-only: sets the sandbox's own
/// net.ipv4.ip_unprivileged_port_start to `port`; nothing when `port` is -1.
/// Async-signal-safe.
StepResult let_forwarder_bind_ports(int port);

/// HTTP_PROXY, HTTPS_PROXY, ALL_PROXY and NO_PROXY, upper and lower case, naming the
/// desk's proxy on 127.0.0.1 (NO_PROXY: the sandbox's own loopback).
std::vector<std::string> egress_proxy_environment();

/// Whether NAME=value sets one of the proxy variables above, in either case.
bool is_proxy_variable(const std::string& entry);

}  // namespace deskd::sandbox
