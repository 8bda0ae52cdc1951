// Writing on a person's behalf with the owner's rights (issue 26): the thread that writes an
// accepted proposal has the owner's file-system identity and no capabilities, so even a
// root deskd writes only where the owner may — and deskd's own identity is untouched after.

#include "runner/daemon/owner_rights.h"

#include <fcntl.h>
#include <sys/fsuid.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace deskd::tools {
namespace {

namespace fs = std::filesystem;

constexpr uid_t kOwner = 24680;

class OwnerRightsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::geteuid() != 0) GTEST_SKIP() << "taking another identity needs root";
    char pattern[] = "/var/tmp/deskd-owner-rights-XXXXXX";
    ASSERT_NE(::mkdtemp(pattern), nullptr);
    root_ = pattern;
    ::chmod(root_.c_str(), 0755);
  }
  void TearDown() override {
    if (!root_.empty()) fs::remove_all(root_);
  }
  static Result<void> create(const fs::path& path) {
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0) return Error::from_errno(errno, "create " + path.native());
    ::close(fd);
    return success();
  }
  fs::path root_;
};

TEST_F(OwnerRightsTest, AFileWrittenAsTheOwnerIsTheOwners) {
  const fs::path folder = root_ / "desk";
  fs::create_directory(folder);
  ASSERT_EQ(::chown(folder.c_str(), kOwner, kOwner), 0);
  ASSERT_TRUE(run_as_owner({kOwner, kOwner}, [&] { return create(folder / "new.md"); }).ok());
  struct stat status {};
  ASSERT_EQ(::stat((folder / "new.md").c_str(), &status), 0);
  EXPECT_EQ(status.st_uid, kOwner);
  EXPECT_EQ(status.st_gid, kOwner);
  EXPECT_EQ(::setfsuid(static_cast<uid_t>(-1)), 0) << "deskd's own thread kept its identity";
}

TEST_F(OwnerRightsTest, TheOwnerCannotWriteWhereOnlyRootMay) {
  // A root-owned 0755 folder: root could write there, its owner-less writer cannot.
  const auto refused = run_as_owner({kOwner, kOwner}, [&] { return create(root_ / "x"); });
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().error_number, EACCES);
  EXPECT_FALSE(fs::exists(root_ / "x"));
}

TEST_F(OwnerRightsTest, RootAsOwnerHasNoPowersBeyondTheModeBits) {
  // Owned by someone else, mode 0755: root's DAC override would let it in, the writer's not.
  const fs::path folder = root_ / "theirs";
  fs::create_directory(folder);
  ASSERT_EQ(::chown(folder.c_str(), kOwner, kOwner), 0);
  const auto refused = run_as_owner({0, 0}, [&] { return create(folder / "x"); });
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().error_number, EACCES);
  // And in its own folder it writes.
  EXPECT_TRUE(run_as_owner({0, 0}, [&] { return create(root_ / "own"); }).ok());
}

TEST_F(OwnerRightsTest, TheWriterIsTheReplacedFilesOwnerElseTheDeskFolders) {
  const fs::path folder = root_ / "desk";
  fs::create_directory(folder);
  ASSERT_EQ(::chown(folder.c_str(), kOwner, kOwner + 1), 0);
  std::ofstream(folder / "theirs.md") << "x";
  ASSERT_EQ(::chown((folder / "theirs.md").c_str(), kOwner + 2, kOwner + 3), 0);
  auto existing = proposal_writer(folder / "theirs.md", folder);
  ASSERT_TRUE(existing.ok());
  EXPECT_EQ(existing->uid, kOwner + 2);
  EXPECT_EQ(existing->gid, kOwner + 3);
  auto fresh = proposal_writer(folder / "new.md", folder);
  ASSERT_TRUE(fresh.ok());
  EXPECT_EQ(fresh->uid, kOwner);
  EXPECT_EQ(fresh->gid, kOwner + 1);
}

}  // namespace
}  // namespace deskd::tools
