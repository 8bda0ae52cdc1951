#pragma once
// NetworkAddress: an IPv4 or IPv6 address as bytes, and the classes of address the egress
// proxy refuses to connect a desk to unless the config names the address itself: loopback,
// private, link-local, multicast, unspecified, reserved ranges and the cloud metadata
// addresses. Pure logic, no sockets: the proxy (runner/egress/) asks, the tests check.

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace deskd::policy {

struct NetworkAddress {
  bool is_v4 = true;
  /// IPv4 in the first 4 bytes (the rest zero); IPv6 in all 16.
  std::array<std::uint8_t, 16> bytes{};

  bool operator==(const NetworkAddress&) const = default;

  /// Parses dotted IPv4 or IPv6 text (no brackets, no zone); nullopt for anything else.
  static std::optional<NetworkAddress> parse(std::string_view text);
  /// An IPv4 address from its 4 bytes in network order.
  static NetworkAddress v4(std::array<std::uint8_t, 4> octets);
  /// The address as inet_ntop writes it.
  std::string text() const;
  /// The IPv4 address an IPv4-mapped (::ffff:a.b.c.d) or IPv4-compatible IPv6 address
  /// carries; the address itself when it is IPv4; nullopt for other IPv6 addresses.
  std::optional<NetworkAddress> embedded_v4() const;
  /// Whether the first `prefix_bits` bits equal `network`'s (same family only).
  bool within(const NetworkAddress& network, unsigned prefix_bits) const;
};

/// Why the proxy must not connect to `address` on its own judgement: "loopback",
/// "private", "link-local", "multicast", "unspecified", "metadata", "reserved",
/// "documentation", "carrier-grade NAT", "broadcast", "benchmarking", "6to4/NAT64/Teredo
/// relay"; nullopt for a public unicast address. IPv4-mapped IPv6 forms count as their IPv4.
std::optional<std::string> refused_address_class(const NetworkAddress& address);

}  // namespace deskd::policy
