#pragma once
// The names a desk with network = "allowlist" reaches without proxy variables: every EXACT
// name of its allowed_hosts (not a wildcard, not an address) gets a loopback address of its
// own in 127.100.0.0/16, written into the sandbox's /etc/hosts; the sandbox's egress
// forwarder listens there on the ports the allowlist gives the name, and deskd treats a
// connection to that address and port as a tunnel to (name, port), checked exactly as a
// CONNECT. So node's fetch, or any tool that ignores HTTPS_PROXY, works unchanged for those
// names; wildcards cannot be listed in /etc/hosts and still need the proxy variables.
// Pure logic: the sandbox (hosts file, listeners) and the proxy (who is who) both ask here,
// from the same allowlist, so they cannot disagree.

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "policy/egress_allowlist.h"
#include "policy/network_address.h"

namespace deskd::policy {

struct EgressName {
  std::string name;                    ///< lower case, as normalized_host_name gives it
  std::array<std::uint8_t, 4> address; ///< 127.100.x.y
  std::vector<std::uint16_t> ports;    ///< ascending; 80 and 443 for an entry without a port

  bool operator==(const EgressName&) const = default;
};

/// At most this many (name, port) listeners in a sandbox; names past it are left out (they
/// still work through the proxy variables).
inline constexpr std::size_t kMaximumEgressListeners = 256;

/// The exact names of `allowlist` in the order first written, each with its address
/// (127.100.0.1 for the first, then on) and ports, within kMaximumEgressListeners.
std::vector<EgressName> egress_names(const EgressAllowlist& allowlist);

/// The name `address`:`port` stands for, or nullptr when it stands for none (an address
/// outside the names, or a port the name was not given).
const EgressName* egress_name_at(const std::vector<EgressName>& names, const NetworkAddress& address,
                                 std::uint16_t port);

/// The sandbox's /etc/hosts: the localhost lines of the host's file (`host_file`, may be
/// empty), or the usual ones, then one line per name. Bounded: the host's file is read for
/// its localhost lines only.
std::string egress_hosts_file(std::string_view host_file, const std::vector<EgressName>& names);

}  // namespace deskd::policy
