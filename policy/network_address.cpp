#include "policy/network_address.h"

#include <arpa/inet.h>

#include <cstring>

namespace deskd::policy {

std::optional<NetworkAddress> NetworkAddress::parse(std::string_view text) {
  if (text.empty() || text.size() > INET6_ADDRSTRLEN) return std::nullopt;
  const std::string copy(text);
  NetworkAddress address;
  // inet_pton's IPv4 form is strictly four decimal parts: no "0x7f.1" or "2130706433",
  // which some resolvers and URL parsers would read as 127.0.0.1.
  if (::inet_pton(AF_INET, copy.c_str(), address.bytes.data()) == 1) return address;
  address.is_v4 = false;
  if (::inet_pton(AF_INET6, copy.c_str(), address.bytes.data()) == 1) return address;
  return std::nullopt;
}

NetworkAddress NetworkAddress::v4(std::array<std::uint8_t, 4> octets) {
  NetworkAddress address;
  std::memcpy(address.bytes.data(), octets.data(), 4);
  return address;
}

std::string NetworkAddress::text() const {
  char buffer[INET6_ADDRSTRLEN] = {};
  ::inet_ntop(is_v4 ? AF_INET : AF_INET6, bytes.data(), buffer, sizeof buffer);
  return buffer;
}

std::optional<NetworkAddress> NetworkAddress::embedded_v4() const {
  if (is_v4) return *this;
  const auto& b = bytes;
  bool leading_zeros = true;
  for (int index = 0; index < 10; ++index) leading_zeros = leading_zeros && b[index] == 0;
  const bool mapped = leading_zeros && b[10] == 0xff && b[11] == 0xff;
  // ::a.b.c.d (deprecated), but not :: and ::1, which are IPv6's own unspecified and loopback.
  const bool compatible = leading_zeros && b[10] == 0 && b[11] == 0 && b[12] != 0;
  if (!mapped && !compatible) return std::nullopt;
  return v4({b[12], b[13], b[14], b[15]});
}

bool NetworkAddress::within(const NetworkAddress& network, unsigned prefix_bits) const {
  if (is_v4 != network.is_v4) return false;
  const unsigned width = is_v4 ? 32 : 128;
  if (prefix_bits > width) return false;
  const unsigned whole = prefix_bits / 8;
  if (std::memcmp(bytes.data(), network.bytes.data(), whole) != 0) return false;
  const unsigned rest = prefix_bits % 8;
  if (rest == 0) return true;
  const std::uint8_t mask = static_cast<std::uint8_t>(0xff << (8 - rest));
  return (bytes[whole] & mask) == (network.bytes[whole] & mask);
}

namespace {

struct Range {
  const char* network;
  unsigned prefix_bits;
  const char* why;
};

// IANA's special-purpose registries (RFC 6890 and its updates), most specific first where
// ranges nest (the metadata addresses lie inside link-local and unique-local space).
constexpr Range kRefusedV4[] = {
    {"169.254.169.254", 32, "metadata"},  {"0.0.0.0", 8, "unspecified"},
    {"10.0.0.0", 8, "private"},           {"100.64.0.0", 10, "carrier-grade NAT"},
    {"127.0.0.0", 8, "loopback"},         {"169.254.0.0", 16, "link-local"},
    {"172.16.0.0", 12, "private"},        {"192.0.0.0", 24, "reserved"},
    {"192.0.2.0", 24, "documentation"},   {"192.88.99.0", 24, "reserved"},
    {"192.168.0.0", 16, "private"},       {"198.18.0.0", 15, "benchmarking"},
    {"198.51.100.0", 24, "documentation"}, {"203.0.113.0", 24, "documentation"},
    {"224.0.0.0", 4, "multicast"},        {"255.255.255.255", 32, "broadcast"},
    {"240.0.0.0", 4, "reserved"},
};

constexpr Range kRefusedV6[] = {
    {"fd00:ec2::254", 128, "metadata"},   {"::", 128, "unspecified"},
    {"::1", 128, "loopback"},             {"64:ff9b::", 96, "6to4/NAT64/Teredo relay"},
    {"64:ff9b:1::", 48, "6to4/NAT64/Teredo relay"}, {"100::", 64, "reserved"},
    {"2001::", 32, "6to4/NAT64/Teredo relay"},      {"2001:db8::", 32, "documentation"},
    {"2002::", 16, "6to4/NAT64/Teredo relay"},      {"fc00::", 7, "private"},
    {"fe80::", 10, "link-local"},         {"fec0::", 10, "private"},
    {"ff00::", 8, "multicast"},           {"::", 96, "reserved"},
};

template <std::size_t N>
std::optional<std::string> first_match(const NetworkAddress& address, const Range (&ranges)[N]) {
  for (const auto& range : ranges) {
    const auto network = NetworkAddress::parse(range.network);
    if (network && address.within(*network, range.prefix_bits)) return std::string(range.why);
  }
  return std::nullopt;
}

}  // namespace

std::optional<std::string> refused_address_class(const NetworkAddress& address) {
  // An IPv4-mapped or -compatible address reaches its IPv4 address: judge that one.
  if (auto v4 = address.embedded_v4(); v4 && !address.is_v4) {
    if (auto why = first_match(*v4, kRefusedV4)) return why;
    return std::string("reserved");  // ::ffff:8.8.8.8 is never how a public name resolves
  }
  if (address.is_v4) return first_match(address, kRefusedV4);
  // Global unicast is 2000::/3; anything outside it that the table missed is not public.
  if ((address.bytes[0] & 0xe0) != 0x20) {
    if (auto why = first_match(address, kRefusedV6)) return why;
    return std::string("reserved");
  }
  return first_match(address, kRefusedV6);
}

}  // namespace deskd::policy
