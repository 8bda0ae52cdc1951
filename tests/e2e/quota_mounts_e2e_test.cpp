// Nothing left on the host (issue 27, point 8): a root deskd gives a quota desk an image on
// a loop device and five mounts, and takes all of them down when it stops. 20 start/stop
// cycles, then a kill -9 and a restart that adopts what the killed deskd left, leave the
// mount table and the loop devices as they were. Other tests may mount beside this one on
// the same host, so the comparison is of what lies under this test's folder: the mountinfo
// lines naming it and the loop devices whose backing file is in it.

#include <signal.h>
#include <sys/mount.h>
#include <unistd.h>

#include <sys/wait.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <thread>

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
using ::testing::SizeIs;

// The mountinfo lines (without their mount and parent ids, which change at every mount)
// that name `folder`.
std::multiset<std::string> mounts_under(const std::string& folder) {
  std::multiset<std::string> found;
  std::ifstream mountinfo("/proc/self/mountinfo");
  for (std::string line; std::getline(mountinfo, line);) {
    if (line.find(folder + "/") == std::string::npos) continue;
    const auto second_space = line.find(' ', line.find(' ') + 1);
    found.insert(line.substr(second_space + 1));
  }
  return found;
}

// "loopN <- backing file" for each loop device whose backing file lies in `folder`.
std::set<std::string> loop_devices_under(const std::string& folder) {
  std::set<std::string> found;
  for (const auto& entry : fs::directory_iterator("/sys/block")) {
    const std::string name = entry.path().filename();
    if (name.rfind("loop", 0) != 0) continue;
    std::ifstream backing(entry.path() / "loop" / "backing_file");
    std::string path;
    if (std::getline(backing, path) && path.rfind(folder + "/", 0) == 0) found.insert(name + " <- " + path);
  }
  return found;
}

// The loop devices under `folder` once they equal `expected`, or after 10 s: the kernel
// detaches a loop device asynchronously, after the last mount namespace that held its file
// system (a killed sandbox's) is torn down, which a loaded sanitizer build may take seconds to do.
std::set<std::string> loop_devices_settled(const std::string& folder, const std::set<std::string>& expected) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  auto found = loop_devices_under(folder);
  while (found != expected && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    found = loop_devices_under(folder);
  }
  return found;
}

// Whatever a failing run left under the folder goes before the fixture removes it.
struct LeftoverMounts {
  const ServeDaemon& daemon;
  ~LeftoverMounts() {
    for (int round = 0; round < 8 && !mounts_under(daemon.folder()).empty(); ++round) {
      for (const char* place : {"Memory.md", "memory", "notes", "scratch"}) {
        ::umount2((daemon.desk_directory("x") + "/" + place).c_str(), MNT_DETACH | UMOUNT_NOFOLLOW);
      }
      ::umount2((daemon.folder() + "/state/desks/x/quota/places").c_str(), MNT_DETACH | UMOUNT_NOFOLLOW);
    }
  }
};

TEST(QuotaMountsE2eTest, TwentyStartsAndStopsAndAKillLeaveTheMountTableAndLoopDevicesAsTheyWere) {
  if (::geteuid() != 0) GTEST_SKIP() << "a disk quota needs a root deskd (it loop-mounts an image per desk)";
  ServeDaemon daemon({DeskSetup{.name = "x", .script = "", .tables = "[desk.sandbox]\ndisk_quota_mb = 16\n"}});
  const LeftoverMounts leftovers{daemon};
  // Each deskd plays the script from its first line; only the last one is asked.
  std::ofstream(daemon.script_path("x")) << scripted_turn({bash_call("df -k --output=size notes | tail -1")});
  const auto mounts_before = mounts_under(daemon.folder());
  const auto loops_before = loop_devices_under(daemon.folder());
  const auto started_at = std::chrono::steady_clock::now();

  for (int cycle = 1; cycle <= 20; ++cycle) {
    std::string why;
    ASSERT_TRUE(daemon.start({}, &why)) << "cycle " << cycle << ": " << why;
    ASSERT_THAT(mounts_under(daemon.folder()), SizeIs(5)) << "cycle " << cycle << ": the image and four places";
    ASSERT_THAT(loop_devices_under(daemon.folder()), SizeIs(1)) << "cycle " << cycle;
    ASSERT_EQ(daemon.stop(), 0) << "cycle " << cycle << ": " << daemon.process().error_output();
    ASSERT_EQ(mounts_under(daemon.folder()), mounts_before) << "cycle " << cycle << " left mounts behind";
    ASSERT_EQ(loop_devices_settled(daemon.folder(), loops_before), loops_before) << "cycle " << cycle << " left a loop device";
  }

  // kill -9: nothing runs to take the mounts down; the next deskd adopts them.
  std::string why;
  ASSERT_TRUE(daemon.start({}, &why)) << why;
  const auto mounts_while_running = mounts_under(daemon.folder());
  const auto loops_while_running = loop_devices_under(daemon.folder());
  daemon.process().signal(SIGKILL);
  EXPECT_EQ(daemon.process().wait(), 128 + SIGKILL);
  EXPECT_EQ(mounts_under(daemon.folder()), mounts_while_running) << "a killed deskd takes nothing down";
  ASSERT_TRUE(daemon.start({}, &why)) << why;
  EXPECT_THAT(mounts_under(daemon.folder()), SizeIs(5)) << "the restarted deskd stacked mounts";
  EXPECT_EQ(loop_devices_under(daemon.folder()), loops_while_running) << "a second loop device for the same image";
  // And the desk's notes are still on its 16 MiB image.
  const auto x = run_turn(daemon, "x", "how big is your notes folder?");
  ASSERT_EQ(x.size(), 1u);
  const auto digits = x[0].text.find_first_of("0123456789");
  ASSERT_NE(digits, std::string::npos) << describe(x[0]);
  EXPECT_LE(std::atol(x[0].text.c_str() + digits), 16L * 1024) << describe(x[0]);
  ASSERT_EQ(daemon.stop(), 0) << daemon.process().error_output();
  EXPECT_EQ(mounts_under(daemon.folder()), mounts_before);
  EXPECT_EQ(loop_devices_settled(daemon.folder(), loops_before), loops_before);
  EXPECT_THAT(daemon.process().error_output(), Not(HasSubstr("left something behind")));
  EXPECT_LT(std::chrono::steady_clock::now() - started_at, std::chrono::seconds(60));
}

// Where the host's / is shared (every systemd host), a root deskd's copy of a folder for the
// sandbox was a peer of the host's mount, and the desk's writable places, bound beneath it
// in the sandbox, appeared in the host's mount table: four more at each launch.
TEST(QuotaMountsE2eTest, ASandboxsMountsStayInsideItWhereTheHostsRootIsShared) {
  if (::geteuid() != 0) GTEST_SKIP() << "only a root deskd copies the host's mounts with open_tree";
  TemporaryDesk desk;
  // A mount namespace of the test's own, made shared like a systemd host's; two launches.
  const std::string launch = std::string(deskd_binary()) + " sandbox --desk '" + desk.directory() + "' -- true";
  const std::string script = "unshare --mount --propagation shared sh -c \"" + launch + " && " + launch +
                             " && grep -c '" + desk.directory() + "' /proc/self/mountinfo\" 2>&1";
  FILE* pipe = ::popen(script.c_str(), "r");
  ASSERT_NE(pipe, nullptr);
  std::string output;
  char buffer[512];
  while (const std::size_t count = std::fread(buffer, 1, sizeof buffer, pipe)) output.append(buffer, count);
  const int status = ::pclose(pipe);
  EXPECT_EQ(output, "0\n") << "the host's mount table holds the sandbox's mounts:\n" << output;
  EXPECT_EQ(WEXITSTATUS(status), 1) << output;  // grep -c found nothing
}

// A reload that restarts a quota desk keeps one set of mounts; one that removes it takes them down.
TEST(QuotaMountsE2eTest, AReloadRestartingADeskKeepsOneSetOfMountsAndOneRemovingItTakesThemDown) {
  if (::geteuid() != 0) GTEST_SKIP() << "a disk quota needs a root deskd (it loop-mounts an image per desk)";
  ServeDaemon daemon({DeskSetup{.name = "x", .script = "", .tables = "[desk.sandbox]\ndisk_quota_mb = 16\n"},
                      DeskSetup{.name = "y", .script = ""}});
  const LeftoverMounts leftovers{daemon};
  const auto mounts_before = mounts_under(daemon.folder());
  std::string why;
  ASSERT_TRUE(daemon.start({}, &why)) << why;
  const auto loops_while_running = loop_devices_under(daemon.folder());
  ASSERT_THAT(loops_while_running, SizeIs(1));

  const std::string x_directory = "directory = \"desks/x\"\n";
  std::string config = file_text(daemon.config_path());
  ASSERT_NE(config.find(x_directory), std::string::npos) << config;
  config.insert(config.find(x_directory) + x_directory.size(), "timeout_seconds = 30\n");
  std::ofstream(daemon.config_path(), std::ios::trunc) << config;
  const DeskctlResult restarted = daemon.deskctl({"reload"});
  ASSERT_EQ(restarted.exit_code, 0) << restarted.output << restarted.error_output;
  ASSERT_THAT(restarted.output, HasSubstr("restarted  x"));
  EXPECT_THAT(mounts_under(daemon.folder()), SizeIs(5));
  // One loop device for the image still; the restart may have detached the old one and
  // attached the image anew, so its number is not part of the promise.
  const auto loops_after_restart = loop_devices_under(daemon.folder());
  EXPECT_THAT(loops_after_restart, SizeIs(1));
  for (const auto& loop : loops_after_restart) {
    EXPECT_THAT(loop, HasSubstr("<- " + daemon.folder() + "/state/desks/x/quota/places.img")) << loop;
  }

  // Without x: its [[desk]] table goes, up to y's.
  const auto x_table = config.rfind("[[desk]]", config.find(x_directory));
  const auto y_table = config.find("[[desk]]", config.find(x_directory));
  ASSERT_NE(x_table, std::string::npos);
  ASSERT_NE(y_table, std::string::npos);
  config.erase(x_table, y_table - x_table);
  std::ofstream(daemon.config_path(), std::ios::trunc) << config;
  const DeskctlResult removed = daemon.deskctl({"reload"});
  ASSERT_EQ(removed.exit_code, 0) << removed.output << removed.error_output << config;
  ASSERT_THAT(removed.output, HasSubstr("stopped    x"));
  EXPECT_EQ(mounts_under(daemon.folder()), mounts_before);
  EXPECT_THAT(loop_devices_settled(daemon.folder(), {}), SizeIs(0));
  EXPECT_EQ(daemon.stop(), 0) << daemon.process().error_output();
  EXPECT_THAT(daemon.process().error_output(), Not(HasSubstr("left something behind")));
}

}  // namespace
}  // namespace deskd::e2e
