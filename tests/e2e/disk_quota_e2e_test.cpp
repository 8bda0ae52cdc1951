// A disk quota for a desk (issue 12), end to end: desk x, with disk_quota_mb = 16, writes
// past it and gets "No space left on device" in its own command, while desk y (no quota)
// and x's journal keep writing, and the person on the host sees x's files where they were.
// A quota is a file system image per desk that a root deskd mounts: root only.

#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "e2e/daemon_fixture.h"
#include "e2e/turn_tools.h"

namespace deskd::e2e {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::Not;

// deskd leaves a quota's mounts in place (the person reads the places through them); the
// test takes them down before its folder goes.
void unmount_quota(const ServeDaemon& daemon, const std::string& desk) {
  for (const char* place : {"Memory.md", "memory", "notes", "scratch"}) {
    ::umount2((daemon.desk_directory(desk) + "/" + place).c_str(), MNT_DETACH);
  }
  ::umount2((daemon.folder() + "/state/desks/" + desk + "/quota/places").c_str(), MNT_DETACH);
}

TEST(DiskQuotaE2eTest, ADeskPastItsQuotaGetsNoSpaceWhileAnotherDeskAndTheJournalKeepWriting) {
  if (::geteuid() != 0) GTEST_SKIP() << "a disk quota needs a root deskd (it mounts an image per desk)";
  ServeDaemon daemon({DeskSetup{.name = "x", .script = "", .tables = "[desk.sandbox]\ndisk_quota_mb = 16\n"},
                      DeskSetup{.name = "y", .script = ""}});
  fs::create_directories(daemon.desk_directory("x") + "/notes");
  std::ofstream(daemon.desk_directory("x") + "/notes/before.md") << "written before the quota\n";
  std::ofstream(daemon.script_path("x")) << scripted_turn(
      {bash_call("cat notes/before.md; dd if=/dev/zero of=scratch/big bs=1M count=40 2>&1 | head -1; echo x-done")});
  std::ofstream(daemon.script_path("y")) << scripted_turn(
      {bash_call("dd if=/dev/zero of=scratch/big bs=1M count=24 2>&1 | tail -1; echo y-done")});
  std::string why;
  const bool started = daemon.start({}, &why);
  if (!started) unmount_quota(daemon, "x");
  ASSERT_TRUE(started) << why;

  const auto x = run_turn(daemon, "x", "fill your scratch");
  const auto y = run_turn(daemon, "y", "fill yours");
  ASSERT_EQ(x.size(), 1u);
  ASSERT_EQ(y.size(), 1u);
  EXPECT_THAT(x[0].text, HasSubstr("written before the quota")) << "the place's old files moved in with it";
  EXPECT_THAT(x[0].text, HasSubstr("No space left on device")) << describe(x[0]);
  EXPECT_THAT(y[0].text, HasSubstr("y-done")) << describe(y[0]);
  EXPECT_THAT(y[0].text, Not(HasSubstr("No space left"))) << describe(y[0]);
  struct stat big {};
  ASSERT_EQ(::stat((daemon.desk_directory("x") + "/scratch/big").c_str(), &big), 0) << "the host sees x's file";
  EXPECT_LE(big.st_size, 16 << 20) << "x wrote past its 16 MiB quota";
  EXPECT_EQ(::stat((daemon.desk_directory("y") + "/scratch/big").c_str(), &big), 0);
  EXPECT_EQ(big.st_size, 24 << 20);
  std::ifstream journal(daemon.journal_path("x"));
  const std::string text((std::istreambuf_iterator<char>(journal)), std::istreambuf_iterator<char>());
  EXPECT_THAT(text, HasSubstr("TURN_FINISHED")) << "x's journal could not be written after x filled its places";
  daemon.stop();
  unmount_quota(daemon, "x");
}

}  // namespace
}  // namespace deskd::e2e
