// The allowlist of network = "allowlist" and the address classes the egress proxy refuses:
// patterns as the config writes them, matching without case, ports, wildcards that never
// match their own apex, and every special-purpose range (RFC 6890) refused unless named,
// IPv4-mapped forms included.

#include "policy/egress_allowlist.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace deskd::policy {
namespace {

using ::testing::HasSubstr;

NetworkAddress address(const char* text) {
  auto parsed = NetworkAddress::parse(text);
  EXPECT_TRUE(parsed) << text;
  return parsed.value_or(NetworkAddress{});
}

EgressAllowlist allowlist(const std::vector<std::string>& entries) {
  auto parsed = EgressAllowlist::parse(entries);
  EXPECT_TRUE(parsed.ok()) << (parsed.ok() ? "" : parsed.error().what);
  return parsed.ok() ? *parsed : EgressAllowlist{};
}

TEST(HostPatternTest, ReadsNamesWildcardsPortsAddressesAndSubnets) {
  auto exact = parse_host_pattern("API.Kite.Trade:443");
  ASSERT_TRUE(exact.ok());
  EXPECT_EQ(exact->kind, HostPattern::Kind::exact_name);
  EXPECT_EQ(exact->name, "api.kite.trade");
  EXPECT_EQ(exact->port, 443);
  auto wildcard = parse_host_pattern("*.example.com");
  ASSERT_TRUE(wildcard.ok());
  EXPECT_EQ(wildcard->kind, HostPattern::Kind::wildcard_name);
  EXPECT_EQ(wildcard->port, std::nullopt);
  auto subnet = parse_host_pattern("10.1.2.0/24");
  ASSERT_TRUE(subnet.ok());
  EXPECT_EQ(subnet->kind, HostPattern::Kind::address);
  EXPECT_EQ(subnet->prefix_bits, 24u);
  auto v6 = parse_host_pattern("[2001:db8::7]:8443");
  ASSERT_TRUE(v6.ok());
  EXPECT_EQ(v6->port, 8443);
  EXPECT_EQ(v6->prefix_bits, 128u);
  EXPECT_TRUE(parse_host_pattern("fd00:ec2::254").ok());
}

TEST(HostPatternTest, RefusesWhatIsNoPatternWithAReason) {
  const std::pair<const char*, const char*> cases[] = {
      {"", "empty"},
      {"*", "only as a leading"},
      {"*.com", "at least two labels"},
      {"api.*.com", "only as a leading"},
      {"exa mple.com", "not a host name"},
      {"example.com:0", "port"},
      {"example.com:70000", "port"},
      {"example.com:http", "port"},
      {"10.0.0.0/33", "longer than the address"},
      {"example.com/24", "only an IP address"},
      {"[::1", "without ']'"},
      {"a..b", "not a host name"},
      {"http://example.com", "not a URL"},
  };
  for (const auto& [text, why] : cases) {
    auto parsed = parse_host_pattern(text);
    ASSERT_FALSE(parsed.ok()) << text;
    EXPECT_THAT(parsed.error().what, HasSubstr(why)) << text;
    EXPECT_THAT(parsed.error().what, HasSubstr(std::string("'") + text + "'"));
  }
}

TEST(EgressAllowlistTest, MatchesNamesWithoutCaseAndWildcardsOnlyBelowTheirApex) {
  const auto list = allowlist({"api.kite.trade:443", "*.example.com", "data.feed.in"});
  EXPECT_TRUE(list.allows_host("api.kite.trade", 443));
  EXPECT_TRUE(list.allows_host("API.KITE.TRADE.", 443));
  EXPECT_FALSE(list.allows_host("api.kite.trade", 80));
  EXPECT_FALSE(list.allows_host("kite.trade", 443));
  EXPECT_TRUE(list.allows_host("a.example.com", 80));
  EXPECT_TRUE(list.allows_host("a.b.example.com", 443));
  EXPECT_FALSE(list.allows_host("example.com", 443));
  EXPECT_FALSE(list.allows_host("badexample.com", 443));
  EXPECT_FALSE(list.allows_host("example.com.evil.org", 443));
  EXPECT_TRUE(list.allows_host("data.feed.in", 8080));
  EXPECT_FALSE(list.allows_host("", 80));
  EXPECT_FALSE(list.allows_host("data.feed.in\r\nHost: x", 80));
}

TEST(EgressAllowlistTest, AnAddressLiteralIsAllowedOnlyWhenAnAddressEntryNamesIt) {
  const auto list = allowlist({"*.example.com", "203.0.113.7", "10.9.0.0/16:443", "[2001:db8::1]"});
  EXPECT_TRUE(list.allows_host("203.0.113.7", 80));
  EXPECT_TRUE(list.allows_host("10.9.200.1", 443));
  EXPECT_FALSE(list.allows_host("10.9.200.1", 80));
  EXPECT_TRUE(list.allows_host("[2001:db8::1]", 443));
  EXPECT_FALSE(list.allows_host("8.8.8.8", 443)) << "a public address is still not on the list";
  EXPECT_TRUE(list.names_address(address("::ffff:203.0.113.7"), 80)) << "the mapped form is the same address";
}

TEST(AddressClassTest, RefusesEverySpecialPurposeRangeAndTheMetadataAddresses) {
  const std::pair<const char*, const char*> cases[] = {
      {"127.0.0.1", "loopback"},          {"127.255.1.2", "loopback"},     {"::1", "loopback"},
      {"10.1.2.3", "private"},            {"172.16.0.1", "private"},       {"172.31.255.255", "private"},
      {"192.168.1.1", "private"},         {"fd12::1", "private"},          {"fc00::1", "private"},
      {"169.254.1.1", "link-local"},      {"fe80::1", "link-local"},       {"169.254.169.254", "metadata"},
      {"fd00:ec2::254", "metadata"},      {"224.0.0.1", "multicast"},      {"ff02::1", "multicast"},
      {"0.0.0.0", "unspecified"},         {"::", "unspecified"},           {"100.64.0.1", "carrier-grade NAT"},
      {"255.255.255.255", "broadcast"},   {"240.0.0.1", "reserved"},       {"192.0.2.1", "documentation"},
      {"2001:db8::1", "documentation"},   {"::ffff:127.0.0.1", "loopback"}, {"::ffff:169.254.169.254", "metadata"},
      {"::ffff:10.0.0.1", "private"},     {"::127.0.0.1", "loopback"},     {"64:ff9b::a00:1", "6to4/NAT64/Teredo relay"},
      {"2002:7f00:1::", "6to4/NAT64/Teredo relay"},
  };
  for (const auto& [text, why] : cases) {
    EXPECT_EQ(refused_address_class(address(text)), std::optional<std::string>(why)) << text;
  }
  for (const char* text : {"8.8.8.8", "1.1.1.1", "172.32.0.1", "2606:4700::1111", "2a00:1450::1"}) {
    EXPECT_EQ(refused_address_class(address(text)), std::nullopt) << text;
  }
}

TEST(AddressClassTest, AnAddressNamedInTheAllowlistIsNoLongerRefused) {
  const auto list = allowlist({"10.201.0.0/24", "127.0.0.1:8081"});
  EXPECT_EQ(refused_destination(list, address("10.201.0.9"), 443), std::nullopt);
  EXPECT_EQ(refused_destination(list, address("10.202.0.9"), 443), "private");
  EXPECT_EQ(refused_destination(list, address("127.0.0.1"), 8081), std::nullopt);
  EXPECT_EQ(refused_destination(list, address("127.0.0.1"), 22), "loopback");
  EXPECT_EQ(refused_destination(list, address("::ffff:10.201.0.9"), 80), std::nullopt);
  EXPECT_EQ(refused_destination(list, address("8.8.8.8"), 443), std::nullopt);
}

TEST(AddressClassTest, ParsingAcceptsOnlyStrictForms) {
  for (const char* text : {"0x7f.0.0.1", "2130706433", "127.1", "010.0.0.1", "1.2.3.4.5", "::ffff:1.2.3", "[::1]", "fe80::1%eth0"}) {
    EXPECT_FALSE(NetworkAddress::parse(text)) << text;
  }
}

}  // namespace
}  // namespace deskd::policy
