// What `deskd check` refuses beyond a key's own value: an 'allowed_hosts' list that no
// desk's network uses, and a state folder deskd could not create or write.

#include <sys/stat.h>
#include <unistd.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "runner/config/config.h"
#include "runner/config/state_folder_check.h"
#include "unit/config/config_test_support.h"

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

namespace deskd::app {
namespace {

using testing::ConfigTest;

// load_config, not parse_config, judges the state folder: it reads the file written here.
class StateFolderCheckTest : public ConfigTest {
 protected:
  std::vector<std::string> problems_of_file(const std::string& state_folder) {
    write("deskd.toml", "[runner]\nstate_folder = \"" + state_folder + "\"\n" + std::string(testing::kAlpha));
    return problems(load_config(file()));
  }
};

TEST_F(StateFolderCheckTest, AStateFolderThatIsAFileIsRefused) {
  write("state", "a file\n");
  EXPECT_THAT(problems_of_file("state"), ElementsAre(HasSubstr("2:16: deskd's state folder " + (root_ / "state").native() +
                                                                " is not a folder")));
}

TEST_F(StateFolderCheckTest, AStateFolderThatCanBeMadeOrWrittenPassesAndIsNotMade) {
  EXPECT_THAT(problems_of_file("new/state"), IsEmpty());
  EXPECT_FALSE(std::filesystem::exists(root_ / "new")) << "deskd check made the state folder";
  std::filesystem::create_directories(root_ / "kept");
  EXPECT_THAT(problems_of_file("kept"), IsEmpty());
}

TEST_F(StateFolderCheckTest, ParsingAloneLeavesTheStateFolderToLoadConfig) {
  write("state", "a file\n");
  // parse_config is what the other tests use, with the default /var/lib/deskd whoever runs them.
  EXPECT_THAT(problems(parse("[runner]\nstate_folder = \"state\"\n" + std::string(testing::kAlpha))), IsEmpty());
}

// Runs the rest of a scope with another effective uid (the real one stays root, to come back).
class EffectiveUid {
 public:
  explicit EffectiveUid(uid_t uid) : changed_(::seteuid(uid) == 0) {}
  ~EffectiveUid() {
    if (changed_ && ::seteuid(0) != 0) std::abort();  // the rest of the tests would run as another uid
  }
  bool changed() const { return changed_; }

 private:
  bool changed_;
};

TEST_F(StateFolderCheckTest, AFolderThisUidMayNotWriteIsRefusedNamingTheUid) {
  if (::geteuid() != 0) {
    // "/" is root's: nobody else may make a folder there.
    const auto refused = check_state_folder("/deskd-state-check-test");
    ASSERT_FALSE(refused.ok());
    EXPECT_EQ(refused.error().what, "deskd's state folder /deskd-state-check-test cannot be created: uid " +
                                        std::to_string(::geteuid()) +
                                        " may not write in /; make it a folder the user deskd runs as may write, or "
                                        "set [runner] state_folder to one");
    return;
  }
  std::filesystem::create_directories(root_ / "kept");
  ::chmod(root_.c_str(), 0700);
  {
    EffectiveUid other(4243);
    ASSERT_TRUE(other.changed());
    const auto unreachable = check_state_folder(root_ / "kept" / "state");
    ASSERT_FALSE(unreachable.ok());
    EXPECT_THAT(unreachable.error().what,
                HasSubstr("cannot be reached: uid 4243 may not look into a folder on its path"));
  }
  ::chmod(root_.c_str(), 0755);
  EffectiveUid other(4243);
  ASSERT_TRUE(other.changed());
  const auto not_creatable = check_state_folder(root_ / "kept" / "state");
  ASSERT_FALSE(not_creatable.ok());
  EXPECT_EQ(not_creatable.error().what, "deskd's state folder " + (root_ / "kept" / "state").native() +
                                            " cannot be created: uid 4243 may not write in " +
                                            (root_ / "kept").native() +
                                            "; make it a folder the user deskd runs as may write, or set [runner] "
                                            "state_folder to one");
  const auto not_writable = check_state_folder(root_ / "kept");
  ASSERT_FALSE(not_writable.ok());
  EXPECT_THAT(not_writable.error().what, HasSubstr((root_ / "kept").native() + " cannot be used: uid 4243 may not write in "));
}

}  // namespace
}  // namespace deskd::app
