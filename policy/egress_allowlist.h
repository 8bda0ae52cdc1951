#pragma once
// EgressAllowlist: the hosts a desk with network = "allowlist" may reach through deskd's
// egress proxy, from the config's `allowed_hosts`. Each entry is one of
//   api.example.com        an exact name (any port)
//   *.example.com          any name strictly below example.com (not example.com itself)
//   api.example.com:443    either form, on that port only
//   203.0.113.7 / [2001:db8::7]:443 / 10.1.2.0/24
//                          an address or subnet named explicitly: it may be connected to
//                          even when it is loopback, private, link-local or metadata space,
//                          and an allowed name may resolve into it
// Names compare without case and without a trailing dot. Pure logic: the proxy asks
// allows_name() before resolving and allows_address() for every address it would use.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "policy/network_address.h"

namespace deskd::policy {

struct HostPattern {
  enum class Kind { exact_name, wildcard_name, address };
  Kind kind = Kind::exact_name;
  std::string name;                  ///< lower case; for a wildcard the suffix without "*."
  NetworkAddress address{};          ///< Kind::address
  unsigned prefix_bits = 0;          ///< Kind::address: 32/128 for one address
  std::optional<std::uint16_t> port; ///< nullopt: any port

  bool operator==(const HostPattern&) const = default;
};

/// Parses one `allowed_hosts` entry; the error is a sentence naming what is wrong.
Result<HostPattern> parse_host_pattern(std::string_view text);

/// The name in lower case without a trailing dot, if it is a valid DNS host name (letters,
/// digits, '-' and '_' in labels of 1..63, 253 in all, no empty label); nullopt otherwise.
std::optional<std::string> normalized_host_name(std::string_view name);

class EgressAllowlist {
 public:
  EgressAllowlist() = default;
  /// Every entry parsed; the first bad one is refused with its text in the message.
  static Result<EgressAllowlist> parse(const std::vector<std::string>& entries);

  /// Whether a request for `host` (a name or an address literal, as the client wrote it)
  /// on `port` may go ahead to resolution. An address literal must be named by an address
  /// entry.
  bool allows_host(std::string_view host, std::uint16_t port) const;
  /// Whether `address` on `port` is named explicitly by an address or subnet entry.
  bool names_address(const NetworkAddress& address, std::uint16_t port) const;

  const std::vector<HostPattern>& patterns() const { return patterns_; }
  /// The entries as the config wrote them, for /status.
  const std::vector<std::string>& entries() const { return entries_; }

 private:
  std::vector<HostPattern> patterns_;
  std::vector<std::string> entries_;
};

/// Why the proxy refuses to connect to `address` for a request on `port`, or nullopt when
/// it may: an address of a refused class (refused_address_class) is allowed only when the
/// allowlist names it.
std::optional<std::string> refused_destination(const EgressAllowlist& allowlist, const NetworkAddress& address,
                                               std::uint16_t port);

}  // namespace deskd::policy
