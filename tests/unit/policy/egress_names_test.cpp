// The exact allowed names a desk reaches without proxy variables: each on its own address in
// 127.100.0.0/16, on the ports its entries give (80 and 443 when none), in the order first
// written; wildcards and addresses are left to the proxy; the sandbox's /etc/hosts keeps the
// host's localhost lines and nothing else of the host's.

#include "policy/egress_names.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace deskd::policy {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;

EgressAllowlist names_allowlist(const std::vector<std::string>& entries) {
  auto parsed = EgressAllowlist::parse(entries);
  EXPECT_TRUE(parsed.ok()) << (parsed.ok() ? "" : parsed.error().what);
  return parsed.ok() ? *parsed : EgressAllowlist{};
}

NetworkAddress names_address(const char* text) { return NetworkAddress::parse(text).value_or(NetworkAddress{}); }

TEST(EgressNamesTest, EachExactNameGetsItsOwnAddressAndItsPorts) {
  const auto names = egress_names(names_allowlist(
      {"API.example.com", "*.cdn.example.com", "10.0.0.0/8", "git.example.org:8443", "git.example.org:22",
       "api.example.com:8080", "203.0.113.9"}));
  ASSERT_EQ(names.size(), 2u);
  EXPECT_EQ(names[0].name, "api.example.com");
  EXPECT_THAT(names[0].address, ElementsAre(127, 100, 0, 1));
  EXPECT_THAT(names[0].ports, ElementsAre(80, 443, 8080));
  EXPECT_EQ(names[1].name, "git.example.org");
  EXPECT_THAT(names[1].address, ElementsAre(127, 100, 0, 2));
  EXPECT_THAT(names[1].ports, ElementsAre(22, 8443));
}

TEST(EgressNamesTest, AnAddressAndPortStandForANameOnlyWhenTheNameHasThatPort) {
  const auto names = egress_names(names_allowlist({"a.example.com:443", "b.example.com"}));
  ASSERT_NE(egress_name_at(names, names_address("127.100.0.1"), 443), nullptr);
  EXPECT_EQ(egress_name_at(names, names_address("127.100.0.1"), 443)->name, "a.example.com");
  EXPECT_EQ(egress_name_at(names, names_address("127.100.0.1"), 80), nullptr);
  EXPECT_EQ(egress_name_at(names, names_address("127.100.0.2"), 80)->name, "b.example.com");
  EXPECT_EQ(egress_name_at(names, names_address("127.100.0.3"), 443), nullptr);
  EXPECT_EQ(egress_name_at(names, names_address("127.0.0.1"), 443), nullptr);
  EXPECT_EQ(egress_name_at(names, names_address("::ffff:127.100.0.2"), 443)->name, "b.example.com");
}

TEST(EgressNamesTest, ListenersAreBoundedAndTheNamesPastTheBoundAreLeftToTheProxy) {
  std::vector<std::string> entries;
  for (int index = 0; index < 300; ++index) entries.push_back("host" + std::to_string(index) + ".example.com");
  const auto names = egress_names(names_allowlist(entries));
  std::size_t listeners = 0;
  for (const auto& name : names) listeners += name.ports.size();
  EXPECT_EQ(listeners, kMaximumEgressListeners);
  EXPECT_EQ(names.size(), kMaximumEgressListeners / 2);
  EXPECT_THAT(names.back().address, ElementsAre(127, 100, 0, 128));
}

TEST(EgressNamesTest, TheHostsFileKeepsTheHostsLocalhostLinesThenNamesEachName) {
  const std::string host = "127.0.0.1\tlocalhost\n127.0.1.1 builder\n::1 localhost ip6-localhost ip6-loopback\n"
                           "# a comment\n0.0.0.0 ads.example\n10.1.1.1 intranet.example\n127.0.0.1 blocked.example\n"
                           "127.100.0.1 localhost-trick\n";
  const std::string file = egress_hosts_file(host, egress_names(names_allowlist({"api.example.com", "*.svc.example"})));
  EXPECT_THAT(file, HasSubstr("127.0.0.1\tlocalhost\n"));
  EXPECT_THAT(file, HasSubstr("::1 localhost ip6-localhost ip6-loopback\n"));
  EXPECT_THAT(file, HasSubstr("127.100.0.1\tapi.example.com\n"));
  for (const char* dropped : {"builder", "ads.example", "intranet", "blocked.example", "localhost-trick", "svc.example"}) {
    EXPECT_THAT(file, Not(HasSubstr(dropped)));
  }
  EXPECT_THAT(egress_hosts_file("", {}), HasSubstr("127.0.0.1\tlocalhost\n"));
}

// A host line that names an allowed name beside localhost would come first and win: the
// tool would reach the sandbox's own loopback, not the name's address.
TEST(EgressNamesTest, AHostLineKeepsOnlyItsLocalhostNames) {
  const std::string host = "127.0.0.1 localhost localhost.example api.example.com other.example\n";
  const std::string file = egress_hosts_file(host, egress_names(names_allowlist({"localhost.example", "api.example.com"})));
  EXPECT_THAT(file, HasSubstr("127.0.0.1\tlocalhost\n"));
  EXPECT_THAT(file, HasSubstr("127.100.0.1\tlocalhost.example\n"));
  EXPECT_THAT(file, HasSubstr("127.100.0.2\tapi.example.com\n"));
  EXPECT_THAT(file, Not(HasSubstr("other.example")));
  EXPECT_EQ(file.find("api.example.com"), file.rfind("api.example.com"));
  EXPECT_EQ(file.find("localhost.example"), file.rfind("localhost.example"));
}

}  // namespace
}  // namespace deskd::policy
