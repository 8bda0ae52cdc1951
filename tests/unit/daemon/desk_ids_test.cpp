// Desk ids under a root deskd: stable across calls and restarts, distinct, the lowest free
// one for a new desk, and a damaged or out-of-range file refused rather than reallocated.

#include "runner/daemon/desk_ids.h"

#include <stdlib.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

namespace deskd::app {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

namespace fs = std::filesystem;

constexpr std::uint32_t kFirst = 1879048192;

class DeskIdsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/var/tmp/deskd-desk-ids-test-XXXXXX";
    ASSERT_NE(::mkdtemp(pattern), nullptr);
    root_ = fs::canonical(pattern);
    config_ = config_with(root_ / "state", kFirst, 65536);
  }
  void TearDown() override { fs::remove_all(root_); }
  // A register of the test's own: the host's holds the ids of every deskd running now.
  fs::path registry() const { return root_ / "uid-registry"; }

  static Config config_with(const fs::path& state, std::uint32_t first, std::uint32_t count) {
    Config config;
    config.runner.state_folder = state;
    config.runner.desk_uid_first = first;
    config.runner.desk_uid_count = count;
    return config;
  }
  void write_ids(const std::string& text) const {
    fs::create_directories(root_ / "state");
    std::ofstream(root_ / "state/desk-ids") << text;
  }
  std::string ids_text() const {
    std::ifstream file(root_ / "state/desk-ids");
    std::stringstream text;
    text << file.rdbuf();
    return text.str();
  }
  uid_t uid_of(const Config& config, const std::string& name) const {
    auto ids = desk_ids_for(config, name, {}, registry());
    EXPECT_TRUE(ids.ok()) << (ids.ok() ? "" : ids.error().what);
    if (!ids.ok()) return 0;
    EXPECT_EQ(ids->uid, ids->gid);
    return ids->uid;
  }

  fs::path root_;
  Config config_;
};

TEST_F(DeskIdsTest, ADeskKeepsItsIdAcrossCallsAndRestarts) {
  // The state folder does not exist yet: the first allocation creates it.
  EXPECT_EQ(uid_of(config_, "alpha"), kFirst);
  EXPECT_EQ(uid_of(config_, "alpha"), kFirst);
  // A restart: a fresh config, the same state folder.
  const Config reloaded = config_with(root_ / "state", kFirst, 65536);
  EXPECT_EQ(uid_of(reloaded, "alpha"), kFirst);
  EXPECT_THAT(ids_text(), HasSubstr("\nalpha 1879048192\n"));
  // Written by rename: no temporary file is left beside it.
  std::size_t entries = 0;
  for ([[maybe_unused]] const auto& entry : fs::directory_iterator(root_ / "state")) ++entries;
  EXPECT_EQ(entries, 1u);
}

TEST_F(DeskIdsTest, ReadingTheIdsHandsNoneOut) {
  auto none = read_desk_ids(config_);
  ASSERT_TRUE(none.ok()) << none.error().what;
  EXPECT_TRUE(none->empty());
  EXPECT_FALSE(fs::exists(root_ / "state/desk-ids"));
  write_ids("alpha 1879048194\nbeta 1879048192\n");
  auto ids = read_desk_ids(config_);
  ASSERT_TRUE(ids.ok()) << ids.error().what;
  EXPECT_EQ(*ids, (std::map<std::string, uid_t>{{"alpha", kFirst + 2}, {"beta", kFirst}}));
}

TEST_F(DeskIdsTest, TwoDesksGetDistinctIds) {
  const uid_t alpha = uid_of(config_, "alpha");
  const uid_t beta = uid_of(config_, "beta");
  EXPECT_NE(alpha, beta);
  EXPECT_EQ(beta, kFirst + 1);
  EXPECT_EQ(uid_of(config_, "alpha"), alpha);
}

TEST_F(DeskIdsTest, ANewDeskTakesTheLowestFreeIdAndNoDeskLosesItsOwn) {
  // "old" left the config long ago; its id stays its own.
  write_ids("# a comment\nold 1879048193\n\nalpha\t1879048195\n");
  EXPECT_EQ(uid_of(config_, "beta"), kFirst);
  EXPECT_EQ(uid_of(config_, "gamma"), kFirst + 2);
  EXPECT_EQ(uid_of(config_, "delta"), kFirst + 4);
  EXPECT_EQ(uid_of(config_, "alpha"), kFirst + 3);
  EXPECT_THAT(ids_text(), HasSubstr("old 1879048193\nalpha 1879048195\nbeta 1879048192\n"));
}

TEST_F(DeskIdsTest, TheOverflowIdIsNeverHandedOut) {
  const Config config = config_with(root_ / "state", 65533, 3);
  EXPECT_EQ(uid_of(config, "alpha"), 65533u);
  EXPECT_EQ(uid_of(config, "beta"), 65535u);
  const auto full = desk_ids_for(config, "gamma", {}, registry());
  ASSERT_FALSE(full.ok());
  EXPECT_THAT(full.error().what, HasSubstr("No desk id is left for desk 'gamma'"));
}

TEST_F(DeskIdsTest, AnIdOutsideTheRangeIsAnErrorNotAReallocation) {
  write_ids("alpha 1879048192\nbeta 1000\n");
  const std::string before = ids_text();
  const auto ids = desk_ids_for(config_, "alpha", {}, registry());
  ASSERT_FALSE(ids.ok());
  EXPECT_THAT(ids.error().what, StartsWith((root_ / "state/desk-ids").native() + ":2: desk 'beta' has the id 1000, "
                                                                                 "outside the desk uid range "
                                                                                 "1879048192...1879113727"));
  EXPECT_EQ(ids_text(), before);
}

TEST_F(DeskIdsTest, ADamagedFileNamesItsLine) {
  const std::string file = (root_ / "state/desk-ids").native();
  const std::pair<const char*, std::string> cases[] = {
      {"alpha 1879048192\nbeta\n", file + ":2: expected \"NAME UID\", found 'beta'"},
      {"alpha 1879048192 7\n", file + ":1: expected \"NAME UID\", found 'alpha 1879048192 7'"},
      {"alpha -5\n", file + ":1: expected \"NAME UID\", found 'alpha -5'"},
      {"a/b 1879048192\n", file + ":1: 'a/b' is not a desk name"},
      {"alpha 1879048192\nalpha 1879048193\n", file + ":2: desk 'alpha' is listed twice (first at line 1)"},
      {"alpha 1879048192\n\nbeta 1879048192\n",
       file + ":3: the id 1879048192 of desk 'beta' is given to another desk at line 1 too"},
  };
  for (const auto& [text, expected] : cases) {
    write_ids(text);
    const auto ids = desk_ids_for(config_, "gamma", {}, registry());
    ASSERT_FALSE(ids.ok()) << text;
    EXPECT_THAT(ids.error().what, StartsWith(expected)) << text;
    EXPECT_EQ(ids_text(), text);
  }
}

}  // namespace
}  // namespace deskd::app
