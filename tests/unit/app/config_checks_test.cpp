// What `deskd check` refuses beyond a key's own value: an 'allowed_hosts' list that no
// desk's network uses.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "runner/app/config.h"
#include "unit/app/config_test_support.h"

namespace deskd::app {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using testing::ConfigTest;
using testing::kAlpha;

constexpr const char* kBeta = "[[desk]]\nname = \"beta\"\ndirectory = \"desks/beta\"\n";

TEST_F(ConfigTest, ADeskListOfAllowedHostsUnderTheHostNetworkIsRefusedAtTheList) {
  const auto found = problems(parse(std::string(kAlpha) + R"([desk.sandbox]
network = "host"
allowed_hosts = ["api.kite.trade:443"]
)"));
  ASSERT_EQ(found.size(), 1u);
  EXPECT_THAT(found[0], HasSubstr("6:17: 'allowed_hosts' limits a desk only under network = \"allowlist\", and desk "
                                  "'alpha' has network = \"host\" (it reaches every host), so the list would be "
                                  "ignored; write network = \"allowlist\""));
}

TEST_F(ConfigTest, ADeskListOfAllowedHostsWithoutANetworkIsRefusedToo) {
  // No network written: "none", under which the list would be ignored as well.
  const auto found = problems(parse(std::string(kAlpha) + "[desk.sandbox]\nallowed_hosts = [\"a.example.com\"]\n"));
  ASSERT_EQ(found.size(), 1u);
  EXPECT_THAT(found[0], HasSubstr("5:17: 'allowed_hosts' limits a desk only under network = \"allowlist\", and desk "
                                  "'alpha' has network = \"none\" (it reaches no host)"));
}

TEST_F(ConfigTest, ASandboxListOfAllowedHostsThatNoDeskUsesIsRefusedAtTheList) {
  const auto found = problems(parse(std::string(R"([sandbox]
network = "host"
allowed_hosts = ["api.kite.trade:443"]
)") + kAlpha + kBeta));
  ASSERT_EQ(found.size(), 1u);
  EXPECT_THAT(found[0], HasSubstr("3:17: 'allowed_hosts' in [sandbox] limits no desk"));
  EXPECT_THAT(found[0], HasSubstr("write network = \"allowlist\" in [sandbox]"));
}

TEST_F(ConfigTest, ASandboxListIsRefusedWhenEveryDeskLeavesTheAllowlist) {
  const auto found = problems(parse(std::string(R"([sandbox]
network = "allowlist"
allowed_hosts = ["api.kite.trade:443"]
)") + kAlpha + "[desk.sandbox]\nnetwork = \"host\"\n"));
  EXPECT_THAT(found, ElementsAre(HasSubstr("3:17: 'allowed_hosts' in [sandbox] limits no desk")));
}

TEST_F(ConfigTest, AllowedHostsPassWhereADeskUsesThem) {
  // [sandbox]'s list, used by the one desk that opts into the allowlist; the other runs on
  // the host's network, as it says.
  const Config shared = valid(std::string(R"([sandbox]
allowed_hosts = ["api.kite.trade:443"]
)") + kAlpha + "[desk.sandbox]\nnetwork = \"allowlist\"\n" + kBeta + "[desk.sandbox]\nnetwork = \"host\"\n");
  EXPECT_EQ(shared.desks[0].sandbox.network, sandbox::NetworkMode::allowlist);
  // A desk's own list under the allowlist it takes from [sandbox]; and an empty list under
  // "none", which ignores nothing.
  EXPECT_THAT(problems(parse(std::string(R"([sandbox]
network = "allowlist"
)") + kAlpha + "[desk.sandbox]\nallowed_hosts = [\"data.example.com\"]\n" + kBeta +
                             "[desk.sandbox]\nnetwork = \"none\"\nallowed_hosts = []\n")),
              IsEmpty());
}

TEST_F(ConfigTest, AnEmptyListUnderTheHostNetworkIsRefused) {
  // It reads as "no host", but the desk reaches every host.
  const auto found = problems(parse(std::string(kAlpha) + "[desk.sandbox]\nnetwork = \"host\"\nallowed_hosts = []\n"));
  EXPECT_THAT(found, ElementsAre(HasSubstr("6:17: 'allowed_hosts' limits a desk only under network = \"allowlist\"")));
}

}  // namespace
}  // namespace deskd::app
