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

namespace deskd::sandbox {

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

/// HTTP_PROXY, HTTPS_PROXY, ALL_PROXY and NO_PROXY, upper and lower case, naming the
/// desk's proxy on 127.0.0.1 (NO_PROXY: the sandbox's own loopback).
std::vector<std::string> egress_proxy_environment();

/// Whether NAME=value sets one of the proxy variables above, in either case.
bool is_proxy_variable(const std::string& entry);

}  // namespace deskd::sandbox
