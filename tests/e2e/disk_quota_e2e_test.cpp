// A disk quota for a desk (issue 12), end to end: desk x, with disk_quota_mb = 16, writes
// past it and gets "No space left on device" in its own command, while desk y (no quota)
// and x's journal keep writing, and the person on the host sees x's files where they were.
// A quota is a file system image per desk that a root deskd mounts: root only. Without
// disk_quota_mb a desk gets the default quota, and an unprivileged deskd, which cannot give
// one, refuses such a config unless it says disk_quota_mb = "none".

#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "e2e/daemon_fixture.h"
#include "e2e/deskd_process.h"
#include "e2e/turn_tools.h"

namespace deskd::e2e {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::Not;

// deskd takes a quota's mounts down when it stops (quota_mounts_e2e_test checks that); this
// takes down whatever a failed run left, before the test's folder goes.
void unmount_quota(const ServeDaemon& daemon, const std::string& desk) {
  for (const char* place : {"Memory.md", "memory", "notes", "scratch"}) {
    ::umount2((daemon.desk_directory(desk) + "/" + place).c_str(), MNT_DETACH);
  }
  ::umount2((daemon.folder() + "/state/desks/" + desk + "/quota/places").c_str(), MNT_DETACH);
}

// The fixture's config accepts desks without a quota; this one takes the default again.
void take_the_default_quota(const ServeDaemon& daemon) {
  std::ifstream in(daemon.config_path());
  std::string config((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::string none = "disk_quota_mb = \"none\"\n";
  const auto at = config.find(none);
  ASSERT_NE(at, std::string::npos) << config;
  config.erase(at, none.size());
  std::ofstream(daemon.config_path(), std::ios::trunc) << config;
}

constexpr uid_t kQuotaDeskdUid = 4243;

TEST(DiskQuotaE2eTest, AnUnprivilegedDeskdRefusesADeskWithoutAQuotaUnlessTheConfigSaysNone) {
  ServeDaemon daemon({DeskSetup{.name = "x", .script = ""}});
  daemon.run_as(kQuotaDeskdUid);
  {
    DeskdProcess check({"check", "--config", daemon.config_path()}, std::nullopt, {}, kQuotaDeskdUid);
    const std::string output = check.read_rest();
    EXPECT_EQ(check.wait(), 0) << output << check.error_output();
  }
  ASSERT_NO_FATAL_FAILURE(take_the_default_quota(daemon));
  DeskdProcess check({"check", "--config", daemon.config_path()}, std::nullopt, {}, kQuotaDeskdUid);
  (void)check.read_rest();
  EXPECT_EQ(check.wait(), 2);
  EXPECT_THAT(check.error_output(), HasSubstr("desk 'x' gets a disk quota of 1024 MiB by default"));
  EXPECT_THAT(check.error_output(), HasSubstr("disk_quota_mb = \"none\""));
}

TEST(DiskQuotaE2eTest, ADeskWhoseConfigSaysNothingGetsTheDefaultGibibyte) {
  if (::geteuid() != 0) GTEST_SKIP() << "a disk quota needs a root deskd (it mounts an image per desk)";
  ServeDaemon daemon({DeskSetup{.name = "x", .script = ""}});
  ASSERT_NO_FATAL_FAILURE(take_the_default_quota(daemon));
  std::ofstream(daemon.script_path("x")) << scripted_turn({bash_call("df -k --output=size notes | tail -1")});
  std::string why;
  const bool started = daemon.start({}, &why);
  if (!started) unmount_quota(daemon, "x");
  ASSERT_TRUE(started) << why;
  const auto x = run_turn(daemon, "x", "how big is your notes folder?");
  daemon.stop();
  unmount_quota(daemon, "x");
  ASSERT_EQ(x.size(), 1u);
  // An ext4 image of 1024 MiB shows a little less: the journal and metadata take their share.
  const auto digits = x[0].text.find_first_of("0123456789");
  ASSERT_NE(digits, std::string::npos) << describe(x[0]);
  const long kibibytes = std::atol(x[0].text.c_str() + digits);
  EXPECT_GT(kibibytes, 900L * 1024) << describe(x[0]);
  EXPECT_LE(kibibytes, 1024L * 1024) << describe(x[0]);
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
