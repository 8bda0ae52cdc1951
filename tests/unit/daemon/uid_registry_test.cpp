// The host-wide uid register (issue 26): two deskd with different state folders never hand
// out the same desk uid, an id already given elsewhere is refused by name, a served desk's
// folder is refused to the ad-hoc commands, and the entries of a state folder that is gone
// are dropped.

#include "sandbox/uid_registry.h"

#include <stdlib.h>

#include <filesystem>
#include <fstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "runner/daemon/desk_ids.h"

namespace deskd::app {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

class UidRegistryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/var/tmp/deskd-uid-registry-test-XXXXXX";
    ASSERT_NE(::mkdtemp(pattern), nullptr);
    root_ = fs::canonical(pattern);
    registry_ = root_ / "registry/uid-registry";
  }
  void TearDown() override { fs::remove_all(root_); }
  Config config_in(const std::string& name) const {
    Config config;
    config.runner.state_folder = root_ / name / "state";
    return config;
  }
  fs::path root_;
  fs::path registry_;
};

TEST_F(UidRegistryTest, TwoStateFoldersNeverShareAnId) {
  const Config first = config_in("first");
  const Config second = config_in("second");
  auto one = desk_ids_for(first, "alpha", root_ / "first/alpha", registry_);
  auto two = desk_ids_for(second, "alpha", root_ / "second/alpha", registry_);
  ASSERT_TRUE(one.ok()) << one.error().what;
  ASSERT_TRUE(two.ok()) << two.error().what;
  EXPECT_NE(one->uid, two->uid);
  auto again = desk_ids_for(first, "alpha", root_ / "first/alpha", registry_);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->uid, one->uid) << "a desk keeps its id";
}

TEST_F(UidRegistryTest, AnIdTheRegisterGivesAnotherDeskdIsRefusedByName) {
  const Config first = config_in("first");
  const Config second = config_in("second");
  auto one = desk_ids_for(first, "alpha", root_ / "first/alpha", registry_);
  ASSERT_TRUE(one.ok());
  // The second deskd's file says "beta" has the same id (copied state, say).
  fs::create_directories(second.runner.state_folder);
  std::ofstream(second.runner.state_folder / "desk-ids") << "beta " << one->uid << "\n";
  auto clash = desk_ids_for(second, "beta", root_ / "second/beta", registry_);
  ASSERT_FALSE(clash.ok());
  EXPECT_THAT(clash.error().what, HasSubstr("also given to desk 'alpha'"));
  EXPECT_THAT(clash.error().what, HasSubstr((root_ / "first/state").native()));
}

TEST_F(UidRegistryTest, AServedDesksFolderIsRefusedToAdHocCommands) {
  ASSERT_TRUE(desk_ids_for(config_in("first"), "alpha", root_ / "desks/alpha", registry_).ok());
  for (const fs::path& folder : {root_ / "desks/alpha", root_ / "desks/alpha/notes", root_ / "desks"}) {
    auto refused = sandbox::refuse_served_desk_folder(folder, registry_);
    ASSERT_FALSE(refused.ok()) << folder;
    EXPECT_THAT(refused.error().what, HasSubstr("belongs to desk 'alpha'"));
  }
  EXPECT_TRUE(sandbox::refuse_served_desk_folder(root_ / "desks/beta", registry_).ok());
}

TEST_F(UidRegistryTest, TheEntriesOfAStateFolderThatIsGoneAreDropped) {
  const Config first = config_in("first");
  auto one = desk_ids_for(first, "alpha", root_ / "desks/alpha", registry_);
  ASSERT_TRUE(one.ok());
  fs::remove_all(root_ / "first");
  EXPECT_TRUE(sandbox::refuse_served_desk_folder(root_ / "desks/alpha", registry_).ok());
  auto reused = desk_ids_for(config_in("second"), "gamma", root_ / "desks/gamma", registry_);
  ASSERT_TRUE(reused.ok());
  EXPECT_EQ(reused->uid, one->uid) << "the freed id is the lowest again";
}

TEST_F(UidRegistryTest, TheAdHocIdIsNeverADesks) {
  Config config = config_in("first");
  config.runner.desk_uid_first = sandbox::kAdHocDeskUid - 1;
  config.runner.desk_uid_count = 3;
  auto first = desk_ids_for(config, "a", root_ / "a", registry_);
  auto second = desk_ids_for(config, "b", root_ / "b", registry_);
  ASSERT_TRUE(first.ok());
  ASSERT_TRUE(second.ok());
  EXPECT_NE(first->uid, sandbox::kAdHocDeskUid);
  EXPECT_NE(second->uid, sandbox::kAdHocDeskUid);
}

}  // namespace
}  // namespace deskd::app
