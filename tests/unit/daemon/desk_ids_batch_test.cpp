// The ids of many desks chosen at once (issue 27): the lowest free ids, distinct, each file
// written once with all of them; a desk refused by the uid register fails alone; a batch
// that adds nothing writes nothing; what fails the whole batch is the outer error.

#include <stdlib.h>
#include <sys/stat.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "runner/daemon/desk_ids.h"
#include "sandbox/uid_registry.h"

namespace deskd::app {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

namespace fs = std::filesystem;

constexpr std::uint32_t kBatchFirst = 1879048192;

std::string text_of(const fs::path& file) {
  std::ifstream stream(file);
  std::stringstream text;
  text << stream.rdbuf();
  return text.str();
}

// The lines of a file that are not comments.
std::vector<std::string> entries_of(const fs::path& file) {
  std::vector<std::string> entries;
  std::istringstream text(text_of(file));
  for (std::string line; std::getline(text, line);) {
    if (!line.empty() && line.front() != '#') entries.push_back(line);
  }
  return entries;
}

class DeskIdsBatchTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/var/tmp/deskd-desk-ids-batch-test-XXXXXX";
    ASSERT_NE(::mkdtemp(pattern), nullptr);
    root_ = fs::canonical(pattern);
    config_ = config_in("state", kBatchFirst, 65536);
  }
  void TearDown() override { fs::remove_all(root_); }

  Config config_in(const std::string& state, std::uint32_t first, std::uint32_t count) const {
    Config config;
    config.runner.state_folder = root_ / state;
    config.runner.desk_uid_first = first;
    config.runner.desk_uid_count = count;
    return config;
  }
  std::vector<DeskToIdentify> desks_named(const std::vector<std::string>& names) const {
    std::vector<DeskToIdentify> desks;
    for (const auto& name : names) desks.push_back(DeskToIdentify{name, root_ / "desks" / name});
    return desks;
  }
  std::string registration_line(uid_t uid, const std::string& state, const std::string& desk) const {
    return std::to_string(uid) + "\t" + (root_ / state).native() + "\t" + desk + "\t" + (root_ / "desks" / desk).native();
  }
  void write_ids(const std::string& text) const {
    fs::create_directories(config_.runner.state_folder);
    std::ofstream(config_.runner.state_folder / "desk-ids") << text;
  }
  fs::path ids_file() const { return config_.runner.state_folder / "desk-ids"; }

  fs::path root_;
  Config config_;
};

TEST_F(DeskIdsBatchTest, ManyDesksGetDistinctLowestFreeIdsWrittenOnce) {
  const fs::path registry = root_ / "registry/uid-registry";
  // "old" left the config long ago; its id and alpha's stay theirs.
  write_ids("old 1879048193\nalpha 1879048195\n");
  auto ids = desk_ids_for_desks(config_, desks_named({"b0", "alpha", "b1", "b2", "b3", "b4"}), registry);
  ASSERT_TRUE(ids.ok()) << ids.error().what;
  ASSERT_EQ(ids->size(), 6u);
  const std::map<std::string, uid_t> expected{{"b0", kBatchFirst},     {"alpha", kBatchFirst + 3}, {"b1", kBatchFirst + 2},
                                              {"b2", kBatchFirst + 4}, {"b3", kBatchFirst + 5},    {"b4", kBatchFirst + 6}};
  for (const auto& [name, uid] : expected) {
    const auto& desk = ids->at(name);
    ASSERT_TRUE(desk.ok()) << name << ": " << desk.error().what;
    EXPECT_EQ(desk->uid, uid) << name;
    EXPECT_EQ(desk->gid, uid) << name;
  }
  // The file holds every desk, new ones in the order they were named, and no temporary file
  // was left beside it.
  EXPECT_EQ(entries_of(ids_file()),
            (std::vector<std::string>{"old 1879048193", "alpha 1879048195", "b0 1879048192", "b1 1879048194",
                                      "b2 1879048196", "b3 1879048197", "b4 1879048198"}));
  std::size_t files = 0;
  for ([[maybe_unused]] const auto& entry : fs::directory_iterator(config_.runner.state_folder)) ++files;
  EXPECT_EQ(files, 1u);
  // The register has each desk of the batch (not "old", which is not served), in order.
  EXPECT_EQ(entries_of(registry),
            (std::vector<std::string>{registration_line(kBatchFirst, "state", "b0"),
                                      registration_line(kBatchFirst + 3, "state", "alpha"),
                                      registration_line(kBatchFirst + 2, "state", "b1"),
                                      registration_line(kBatchFirst + 4, "state", "b2"),
                                      registration_line(kBatchFirst + 5, "state", "b3"),
                                      registration_line(kBatchFirst + 6, "state", "b4")}));
}

TEST_F(DeskIdsBatchTest, ADeskWhoseIdAnotherDeskdHoldsFailsAloneAndTheOthersGetIds) {
  const fs::path registry = root_ / "registry/uid-registry";
  const Config first = config_in("first", kBatchFirst, 65536);
  auto alpha = desk_ids_for(first, "alpha", root_ / "desks/alpha", registry);
  ASSERT_TRUE(alpha.ok()) << alpha.error().what;
  // This deskd's file says "beta" has alpha's id (copied state, say).
  write_ids("beta " + std::to_string(alpha->uid) + "\n");
  auto ids = desk_ids_for_desks(config_, desks_named({"gamma", "beta", "delta"}), registry);
  ASSERT_TRUE(ids.ok()) << ids.error().what;
  const auto& beta = ids->at("beta");
  ASSERT_FALSE(beta.ok());
  EXPECT_EQ(beta.error().code, ErrorCode::refused);
  EXPECT_THAT(beta.error().what, StartsWith("The uid " + std::to_string(alpha->uid) +
                                            " of desk 'beta' is also given to desk 'alpha' of the deskd whose state "
                                            "folder is " + (root_ / "first").native()));
  const auto& gamma = ids->at("gamma");
  const auto& delta = ids->at("delta");
  ASSERT_TRUE(gamma.ok()) << gamma.error().what;
  ASSERT_TRUE(delta.ok()) << delta.error().what;
  // Neither alpha's id (the register's) nor beta's (the file's) again.
  EXPECT_EQ(gamma->uid, kBatchFirst + 1);
  EXPECT_EQ(delta->uid, kBatchFirst + 2);
  EXPECT_EQ(entries_of(registry), (std::vector<std::string>{registration_line(kBatchFirst, "first", "alpha"),
                                                            registration_line(kBatchFirst + 1, "state", "gamma"),
                                                            registration_line(kBatchFirst + 2, "state", "delta")}));
}

TEST_F(DeskIdsBatchTest, ASecondBatchReturnsTheSameIdsAndWritesNothing) {
  const fs::path registry = root_ / "registry/uid-registry";
  const auto desks = desks_named({"alpha", "beta", "gamma"});
  auto first = desk_ids_for_desks(config_, desks, registry);
  ASSERT_TRUE(first.ok()) << first.error().what;
  struct stat ids_before {}, registry_before {};
  ASSERT_EQ(::stat(ids_file().c_str(), &ids_before), 0);
  ASSERT_EQ(::stat(registry.c_str(), &registry_before), 0);
  auto second = desk_ids_for_desks(config_, desks, registry);
  ASSERT_TRUE(second.ok()) << second.error().what;
  for (const auto& desk : desks) {
    ASSERT_TRUE(first->at(desk.name).ok());
    ASSERT_TRUE(second->at(desk.name).ok());
    EXPECT_EQ(second->at(desk.name)->uid, first->at(desk.name)->uid) << desk.name;
  }
  struct stat ids_after {}, registry_after {};
  ASSERT_EQ(::stat(ids_file().c_str(), &ids_after), 0);
  ASSERT_EQ(::stat(registry.c_str(), &registry_after), 0);
  // Both are written by rename, so a write would show as another inode.
  EXPECT_EQ(ids_after.st_ino, ids_before.st_ino);
  EXPECT_EQ(ids_after.st_mtim.tv_nsec, ids_before.st_mtim.tv_nsec);
  EXPECT_EQ(registry_after.st_ino, registry_before.st_ino);
  EXPECT_EQ(registry_after.st_mtim.tv_nsec, registry_before.st_mtim.tv_nsec);
}

TEST_F(DeskIdsBatchTest, ADeskThatMovedIsRegisteredAtItsNewFolder) {
  const fs::path registry = root_ / "registry/uid-registry";
  ASSERT_TRUE(desk_ids_for_desks(config_, desks_named({"alpha", "beta"}), registry).ok());
  auto moved = desk_ids_for_desks(config_, {DeskToIdentify{"alpha", root_ / "elsewhere"}}, registry);
  ASSERT_TRUE(moved.ok()) << moved.error().what;
  ASSERT_TRUE(moved->at("alpha").ok());
  EXPECT_EQ(moved->at("alpha")->uid, kBatchFirst);
  EXPECT_EQ(entries_of(registry),
            (std::vector<std::string>{std::to_string(kBatchFirst) + "\t" + (root_ / "state").native() + "\talpha\t" +
                                          (root_ / "elsewhere").native(),
                                      registration_line(kBatchFirst + 1, "state", "beta")}));
}

TEST_F(DeskIdsBatchTest, DesksBeyondTheRangeFailAloneAndTheOthersAreKept) {
  const fs::path registry = root_ / "registry/uid-registry";
  const Config config = config_in("state", 65533, 3);  // 65533 and 65535: 65534 is never a desk's
  auto ids = desk_ids_for_desks(config, desks_named({"alpha", "a/b", "beta", "gamma"}), registry);
  ASSERT_TRUE(ids.ok()) << ids.error().what;
  ASSERT_TRUE(ids->at("alpha").ok());
  ASSERT_TRUE(ids->at("beta").ok());
  EXPECT_EQ(ids->at("alpha")->uid, 65533u);
  EXPECT_EQ(ids->at("beta")->uid, 65535u);
  ASSERT_FALSE(ids->at("gamma").ok());
  EXPECT_THAT(ids->at("gamma").error().what, HasSubstr("No desk id is left for desk 'gamma'"));
  ASSERT_FALSE(ids->at("a/b").ok());
  EXPECT_EQ(ids->at("a/b").error().what, "'a/b' is not a desk name.");
  EXPECT_EQ(entries_of(config.runner.state_folder / "desk-ids"),
            (std::vector<std::string>{"alpha 65533", "beta 65535"}));
}

TEST_F(DeskIdsBatchTest, ADamagedFileFailsTheWholeBatchAndNothingIsWritten) {
  const fs::path registry = root_ / "registry/uid-registry";
  write_ids("alpha 1879048192\nalpha 1879048193\n");
  auto ids = desk_ids_for_desks(config_, desks_named({"beta", "gamma"}), registry);
  ASSERT_FALSE(ids.ok());
  EXPECT_THAT(ids.error().what, StartsWith(ids_file().native() + ":2: desk 'alpha' is listed twice"));
  EXPECT_EQ(text_of(ids_file()), "alpha 1879048192\nalpha 1879048193\n");
  EXPECT_FALSE(fs::exists(registry));
}

TEST_F(DeskIdsBatchTest, AnUnwritableStateFolderFailsTheWholeBatch) {
  const fs::path registry = root_ / "registry/uid-registry";
  // A file where the state folder should be: it cannot be made, whoever runs the test.
  std::ofstream(root_ / "state") << "not a folder";
  auto ids = desk_ids_for_desks(config_, desks_named({"alpha"}), registry);
  ASSERT_FALSE(ids.ok());
  EXPECT_THAT(ids.error().what, HasSubstr("state"));
  EXPECT_TRUE(entries_of(registry).empty());
}

}  // namespace
}  // namespace deskd::app
