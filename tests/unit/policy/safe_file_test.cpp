// SafeFile is the last line of defence: PathPolicy checked a path, and anything may have
// changed since. Every test runs twice, with openat2(RESOLVE_NO_SYMLINKS) and with the
// O_NOFOLLOW component walk used on kernels without it, because both must refuse links.

#include "policy/safe_file.h"

#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <functional>
#include <future>
#include <string>

#include "unit/policy/desk_fixture.h"


namespace {

using deskd::ErrorCode;
using deskd::Result;
using deskd::policy::FileContents;
using deskd::policy::SafeFile;
using deskd::policy::SafeFileTestPeer;
using deskd::policy::WriteMode;
using deskd::policy::testing::DeskFixture;
using deskd::policy::testing::entries_of;
using deskd::policy::testing::error_code_of;
using deskd::policy::testing::kPlan;
using deskd::policy::testing::kSecret;
using deskd::policy::testing::make_symlink;
using deskd::policy::testing::outcome;
using deskd::policy::testing::read_file;
using deskd::policy::testing::write_file;
using ::testing::HasSubstr;
using Path = std::filesystem::path;

constexpr std::size_t kPlenty = 1 << 20;

enum class Walk { openat2, component_walk };

struct stat status_of(const Path& path) {
  struct stat status {};
  EXPECT_EQ(::lstat(path.c_str(), &status), 0) << path;
  return status;
}

std::string contents_or_error(const Result<FileContents>& result) {
  if (!result.ok()) return "refused: " + result.error().what;
  return result->bytes + (result->truncated ? " [truncated]" : "");
}

// Runs `operation`, which must return promptly even though it touches a FIFO. Should it
// block in open(), opening the other end releases it, so the test fails instead of hanging.
void expect_no_hang(const Path& fifo, const std::function<void()>& operation) {
  auto finished = std::async(std::launch::async, operation);
  if (finished.wait_for(std::chrono::seconds(10)) == std::future_status::timeout) {
    ADD_FAILURE() << "the operation blocked on the FIFO " << fifo;
    const int release = ::open(fifo.c_str(), O_RDWR | O_NONBLOCK | O_CLOEXEC);
    finished.wait();
    if (release >= 0) ::close(release);
  }
}

class SafeFileTest : public DeskFixture, public ::testing::WithParamInterface<Walk> {
 protected:
  void SetUp() override {
    DeskFixture::SetUp();
    if (HasFatalFailure()) return;
    if (GetParam() == Walk::openat2 && !SafeFile::uses_openat2()) GTEST_SKIP() << "no openat2 here";
    SafeFileTestPeer::force_component_walk(GetParam() == Walk::component_walk);
  }
  void TearDown() override {
    SafeFileTestPeer::force_component_walk(false);
    DeskFixture::TearDown();
  }

  Result<void> write(const Path& path, std::string_view contents,
                     WriteMode mode = WriteMode::replace_atomically) const {
    return SafeFile::write(path, contents, mode, desk());
  }
  static std::string read(const Path& path, std::size_t maximum = kPlenty) {
    return contents_or_error(SafeFile::read(path, maximum));
  }
};

TEST_P(SafeFileTest, UsesTheWalkAskedFor) {
  EXPECT_EQ(SafeFile::uses_openat2(), GetParam() == Walk::openat2);
}

TEST_P(SafeFileTest, WrittenBytesReadBackUnchanged) {
  const std::string bytes("line one\n\0binary\xff\n", 18);
  for (const auto mode : {WriteMode::replace_atomically, WriteMode::rewrite_in_place}) {
    EXPECT_EQ(outcome(write(desk() / "notes/a.md", bytes, mode)), "ok");
    EXPECT_EQ(read(desk() / "notes/a.md"), bytes);
  }
  EXPECT_EQ(outcome(write(desk() / "notes/empty.md", "")), "ok");
  EXPECT_EQ(read(desk() / "notes/empty.md"), "");
}

TEST_P(SafeFileTest, ReplaceAtomicallyInstallsANewFileAndKeepsThePermissions) {
  const Path note = desk() / "notes/a.md";
  write_file(note, "old contents");
  ASSERT_EQ(::chmod(note.c_str(), 0640), 0);
  const ino_t old_inode = status_of(note).st_ino;
  // A reader that opened the old file keeps seeing all of it: nothing was written over it.
  auto old_reader = SafeFile::open_for_reading(note);
  ASSERT_TRUE(old_reader.ok()) << old_reader.error().what;

  EXPECT_EQ(outcome(write(note, "new")), "ok");

  const struct stat replaced = status_of(note);
  EXPECT_NE(replaced.st_ino, old_inode);
  EXPECT_EQ(replaced.st_mode & 07777, 0640u);
  EXPECT_EQ(read(note), "new");
  char buffer[64] = {};
  EXPECT_EQ(::pread(old_reader->get(), buffer, sizeof buffer, 0), 12);
  EXPECT_EQ(std::string(buffer), "old contents");
  EXPECT_EQ(entries_of(desk() / "notes"), std::vector<std::string>{"a.md"}) << "temporary file left behind";
}

TEST_P(SafeFileTest, ReplaceAtomicallyCreatesANewFileReadableByAll) {
  EXPECT_EQ(outcome(write(desk() / "scratch/new.txt", "x")), "ok");
  EXPECT_EQ(status_of(desk() / "scratch/new.txt").st_mode & 07777, 0644u);
  EXPECT_EQ(entries_of(desk() / "scratch"), std::vector<std::string>{"new.txt"});
}

TEST_P(SafeFileTest, RewriteInPlaceKeepsTheInode) {
  // The sandbox binds Memory.md on its own; a new inode would be invisible to it.
  const Path memory = desk() / "Memory.md";
  write_file(memory, "a long first version of the memory");
  const ino_t inode = status_of(memory).st_ino;
  EXPECT_EQ(outcome(write(memory, "short", WriteMode::rewrite_in_place)), "ok");
  EXPECT_EQ(status_of(memory).st_ino, inode);
  EXPECT_EQ(read(memory), "short");
  EXPECT_EQ(outcome(write(desk() / "notes/fresh.md", "made", WriteMode::rewrite_in_place)), "ok");
  EXPECT_EQ(read(desk() / "notes/fresh.md"), "made");
}

TEST_P(SafeFileTest, CreatesMissingFoldersBelowTheBase) {
  EXPECT_EQ(outcome(write(desk() / "notes/2024/06/01.md", "day")), "ok");
  EXPECT_EQ(read_file(desk() / "notes/2024/06/01.md"), "day");
  EXPECT_EQ(outcome(SafeFile::write(desk() / "scratch/a/b.txt", "b", WriteMode::replace_atomically,
                                    desk() / "scratch")),
            "ok");
  EXPECT_EQ(read_file(desk() / "scratch/a/b.txt"), "b");
}

TEST_P(SafeFileTest, RefusesAPathOutsideTheBaseOrAMissingBase) {
  EXPECT_EQ(error_code_of(write(root() / "outside.md", "x")), ErrorCode::internal);
  EXPECT_EQ(error_code_of(SafeFile::write(desk() / "notes/new/a.md", "x", WriteMode::replace_atomically,
                                          desk() / "notes/new")),
            ErrorCode::not_found);
  EXPECT_FALSE(std::filesystem::exists(root() / "outside.md"));
  EXPECT_FALSE(std::filesystem::exists(desk() / "notes/new"));
}

TEST_P(SafeFileTest, RefusesRelativePaths) {
  EXPECT_EQ(error_code_of(SafeFile::read("notes/a.md", kPlenty)), ErrorCode::internal);
  EXPECT_EQ(error_code_of(SafeFile::write("notes/a.md", "x", WriteMode::replace_atomically, desk())),
            ErrorCode::internal);
}

TEST_P(SafeFileTest, MissingFileIsNotFound) {
  EXPECT_EQ(error_code_of(SafeFile::read(desk() / "notes/missing.md", kPlenty)), ErrorCode::not_found);
}

TEST_P(SafeFileTest, RefusesALinkAsTheFinalComponent) {
  make_symlink("../plan.md", desk() / "notes/link.md");
  make_symlink(secret_key(), desk() / "notes/secret.md");
  EXPECT_EQ(error_code_of(SafeFile::read(desk() / "notes/secret.md", kPlenty)), ErrorCode::refused);
  EXPECT_EQ(error_code_of(SafeFile::open_for_reading(desk() / "notes/link.md")), ErrorCode::refused);
  for (const auto mode : {WriteMode::replace_atomically, WriteMode::rewrite_in_place}) {
    EXPECT_EQ(error_code_of(write(desk() / "notes/link.md", "overwritten", mode)), ErrorCode::refused);
  }
  // Neither the link nor what it points at was touched.
  EXPECT_TRUE(std::filesystem::is_symlink(desk() / "notes/link.md"));
  EXPECT_EQ(read_file(desk() / "plan.md"), kPlan);
}

TEST_P(SafeFileTest, RefusesALinkAsAnIntermediateFolder) {
  make_symlink(secrets(), desk() / "notes/to_secrets");
  EXPECT_EQ(error_code_of(SafeFile::read(desk() / "notes/to_secrets/key.txt", kPlenty)), ErrorCode::refused);
  EXPECT_EQ(error_code_of(SafeFile::open_directory(desk() / "notes/to_secrets")), ErrorCode::refused);
  for (const auto mode : {WriteMode::replace_atomically, WriteMode::rewrite_in_place}) {
    EXPECT_EQ(error_code_of(write(desk() / "notes/to_secrets/key.txt", "overwritten", mode)), ErrorCode::refused);
    EXPECT_EQ(error_code_of(write(desk() / "notes/to_secrets/new.txt", "planted", mode)), ErrorCode::refused);
    EXPECT_EQ(error_code_of(write(desk() / "notes/to_secrets/sub/new.txt", "planted", mode)), ErrorCode::refused);
  }
  EXPECT_EQ(entries_of(secrets()), std::vector<std::string>{"key.txt"});
  EXPECT_EQ(read_file(secret_key()), kSecret);
}

TEST_P(SafeFileTest, RefusesALinkAboveTheDesk) {
  make_symlink(desk(), root() / "desk_link");
  const Path through_link = root() / "desk_link/notes/a.md";
  write_file(desk() / "notes/a.md", "note");
  EXPECT_EQ(error_code_of(SafeFile::read(through_link, kPlenty)), ErrorCode::refused);
  EXPECT_EQ(error_code_of(SafeFile::write(through_link, "x", WriteMode::replace_atomically, root() / "desk_link")),
            ErrorCode::refused);
  EXPECT_EQ(read_file(desk() / "notes/a.md"), "note");
}

TEST_P(SafeFileTest, OpensARealFolder) {
  const auto folder = SafeFile::open_directory(desk() / "notes");
  ASSERT_TRUE(folder.ok()) << folder.error().what;
  EXPECT_TRUE(folder->valid());
}

TEST_P(SafeFileTest, RefusesAFolderAsTheFile) {
  EXPECT_EQ(read(desk() / "notes"), "refused: " + (desk() / "notes").native() + " is a folder, not a file.");
  for (const auto mode : {WriteMode::replace_atomically, WriteMode::rewrite_in_place}) {
    EXPECT_EQ(error_code_of(write(desk() / "notes", "x", mode)), ErrorCode::refused);
  }
  EXPECT_TRUE(std::filesystem::is_directory(desk() / "notes"));
}

TEST_P(SafeFileTest, RefusesAFifoWithoutHanging) {
  const Path fifo = desk() / "scratch/pipe";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0644), 0);
  expect_no_hang(fifo, [&] {
    EXPECT_EQ(read(fifo), "refused: " + fifo.native() + " is not a regular file (a device, pipe or socket).");
  });
  for (const auto mode : {WriteMode::replace_atomically, WriteMode::rewrite_in_place}) {
    expect_no_hang(fifo, [&] { EXPECT_FALSE(write(fifo, "x", mode).ok()); });
  }
  EXPECT_TRUE(S_ISFIFO(status_of(fifo).st_mode)) << "the FIFO was replaced";
}

TEST_P(SafeFileTest, BoundedReadSaysWhenItTruncated) {
  const Path note = desk() / "notes/digits.txt";
  write_file(note, "0123456789");
  EXPECT_EQ(read(note, 4), "0123 [truncated]");
  EXPECT_EQ(read(note, 9), "012345678 [truncated]");
  EXPECT_EQ(read(note, 10), "0123456789");
  EXPECT_EQ(read(note, 11), "0123456789");
  EXPECT_EQ(read(note, 0), " [truncated]");
  write_file(note, "");
  EXPECT_EQ(read(note, 0), "");
}

TEST_P(SafeFileTest, BoundedReadOfALargeFileStopsAtTheMaximum) {
  // Larger than SafeFile's read buffer, so the cut falls in a later chunk.
  const std::string large(200000, 'L');
  write_file(desk() / "notes/large.txt", large);
  const auto result = SafeFile::read(desk() / "notes/large.txt", 100001);
  ASSERT_TRUE(result.ok()) << result.error().what;
  EXPECT_EQ(result->bytes.size(), 100001u);
  EXPECT_TRUE(result->truncated);
  EXPECT_EQ(read(desk() / "notes/large.txt", large.size()), large);
}

// An absolute path must be walked from "/", whatever the current folder holds; a walk
// that starts at the current folder would read and write a look-alike tree there.
TEST_P(SafeFileTest, AbsolutePathsStartAtTheRootNotTheCurrentFolder) {
  const Path look_alike = root() / "cwd" / desk().relative_path();
  std::filesystem::create_directories(look_alike / "notes");
  write_file(look_alike / "notes/a.md", "look-alike");
  write_file(desk() / "notes/a.md", "real");

  const int previous = ::open(".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  ASSERT_GE(previous, 0);
  if (::chdir((root() / "cwd").c_str()) != 0) {
    ::close(previous);
    FAIL() << "chdir failed";
  }
  const std::string read_back = read(desk() / "notes/a.md");
  const auto written = write(desk() / "notes/b.md", "written");
  EXPECT_EQ(::fchdir(previous), 0);
  ::close(previous);

  EXPECT_EQ(read_back, "real");
  EXPECT_EQ(outcome(written), "ok");
  EXPECT_TRUE(std::filesystem::exists(desk() / "notes/b.md"));
  EXPECT_FALSE(std::filesystem::exists(look_alike / "notes/b.md"));
}

std::string walk_name(const ::testing::TestParamInfo<Walk>& walk) {
  return walk.param == Walk::openat2 ? "openat2" : "component_walk";
}

INSTANTIATE_TEST_SUITE_P(BothWalks, SafeFileTest, ::testing::Values(Walk::openat2, Walk::component_walk),
                         walk_name);

}  // namespace
