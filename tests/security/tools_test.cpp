// The sandbox is tight but usable: bash, coreutils, python3 and git work inside; and the
// command-line contract of `deskd sandbox` — exit statuses, setup failures, the desk
// folder, --print-seccomp.

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "security/sandbox_runner.h"

namespace deskd::security_testing {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::StartsWith;

class ToolsTest : public SandboxTest {};

TEST_P(ToolsTest, BashRuns) {
  const SandboxRun run = sandbox({"/bin/bash", "-c", "echo \"hello from $0\"", "bash"});
  EXPECT_EQ(run.exit_status, 0) << run.describe();
  EXPECT_EQ(run.out, "hello from bash\n");
}

TEST_P(ToolsTest, CoreutilsWorkThroughPath) {
  const SandboxRun run =
      sandbox({"bash", "-c", "ls; cat README.md; printf 'pear\\napple\\n' | sort"});
  EXPECT_EQ(run.exit_status, 0) << run.describe();
  EXPECT_THAT(run.out, HasSubstr("README.md\n"));
  EXPECT_THAT(run.out, HasSubstr("scratch\n"));
  EXPECT_THAT(run.out, HasSubstr("This desk is for tests.\napple\npear\n"));
}

TEST_P(ToolsTest, Python3Runs) {
  const SandboxRun run =
      sandbox({"python3", "-c", "import os, sys; print(6 * 7, os.getcwd() == os.environ['HOME'])"});
  EXPECT_EQ(run.exit_status, 0) << run.describe();
  EXPECT_EQ(run.out, "42 True\n") << run.describe();
}

TEST_P(ToolsTest, GitCanInitAndCommitInScratch) {
  const std::string script =
      "set -e; cd scratch; git init -q repo; cd repo; echo hello > greeting.txt\n"
      "git add greeting.txt\n"
      "git -c user.name=Desk -c user.email=desk@example.invalid commit -q -m first\n"
      "git log --format=%s\n";
  const SandboxRun run = sandbox({"/bin/bash", "-c", script});
  EXPECT_EQ(run.exit_status, 0) << run.describe();
  EXPECT_EQ(run.out, "first\n") << run.describe();
  EXPECT_TRUE(fs::exists(desk().path("scratch/repo/.git/HEAD")));
}

TEST_P(ToolsTest, HostnameIsDeskd) {
  const SandboxRun run = sandbox({"uname", "-n"});
  EXPECT_EQ(run.out, "deskd\n") << run.describe();
}

TEST_P(ToolsTest, ExitStatusIsTheCommands) {
  EXPECT_EQ(sandbox({"/bin/bash", "-c", "exit 7"}).exit_status, 7);
  EXPECT_EQ(sandbox({"/bin/bash", "-c", "kill -TERM $$"}).exit_status, 128 + SIGTERM);
  EXPECT_EQ(sandbox({"/bin/true"}).exit_status, 0);
}

TEST_P(ToolsTest, MissingCommandExits127) {
  EXPECT_EQ(sandbox({"/nonexistent/command"}).exit_status, 127);
  EXPECT_EQ(sandbox({"no-such-command-for-deskd"}).exit_status, 127);
}

TEST_P(ToolsTest, NonExecutableCommandExits126) {
  const SandboxRun run = sandbox({desk().path("README.md")});
  EXPECT_EQ(run.exit_status, 126) << run.describe();
}

TEST_P(ToolsTest, SetupFailureExits125WithTheReason) {
  const SandboxRun run =
      run_deskd(daemon(), {"sandbox", "--desk", "/nonexistent/desk", "--", "/bin/true"});
  EXPECT_EQ(run.exit_status, 125) << run.describe();
  EXPECT_THAT(run.err, StartsWith("deskd sandbox: ")) << run.describe();
  EXPECT_GT(run.err.size(), std::string("deskd sandbox: \n").size());
}

// An --allow list the network would ignore is a usage mistake, told before anything starts:
// a desk meant to reach two hosts must not run with the host's whole network, or none.
TEST_P(ToolsTest, AnAllowListOutsideTheAllowlistNetworkIsAUsageError) {
  for (const char* network : {"none", "host"}) {
    const SandboxRun run = run_deskd(
        daemon(), {"sandbox", "--desk", desk().directory(), "--net", network, "--allow", "example.com", "--", "/bin/true"});
    EXPECT_EQ(run.exit_status, 2) << run.describe();
    EXPECT_THAT(run.err, HasSubstr("--allow limits a sandbox only under --net allowlist")) << run.describe();
  }
}

TEST_P(ToolsTest, PrintSeccompShowsTheProfile) {
  const SandboxRun run = run_deskd(daemon(), {"sandbox", "--print-seccomp"});
  EXPECT_EQ(run.exit_status, 0) << run.describe();
  EXPECT_THAT(run.out, HasSubstr("mount"));
}

TEST_P(ToolsTest, WithoutDeskTheCurrentFolderIsTheDesk) {
  const std::string folder = desk().root() + "/plain";
  ASSERT_TRUE(fs::create_directory(folder));
  ::chmod(folder.c_str(), 0755);
  desk().hand_over(folder);
  LaunchOptions options;
  options.working_directory = folder;
  const SandboxRun run = run_deskd(daemon(), {"sandbox", "--", "/bin/pwd"}, options);
  EXPECT_EQ(run.out, folder + "\n") << run.describe();
  EXPECT_TRUE(fs::is_empty(folder)) << "deskd created something in " << folder;
}

TEST_P(ToolsTest, ADeskUnderAParentItsUidCannotSearchStartsAndWrites) {
  // A 0700 parent (a mkdtemp folder, /root): deskd's, not the desk's. A root deskd opens the
  // desk folder itself; the sandbox builds its own way there.
  const std::string parent = desk().root() + "/private";
  ASSERT_TRUE(fs::create_directory(parent));
  const std::string folder = parent + "/desk";
  ASSERT_TRUE(fs::create_directory(folder));
  ::chmod(folder.c_str(), 0755);
  if (daemon() == Daemon::unprivileged) desk().hand_over(parent);
  ::chmod(parent.c_str(), 0700);
  const std::string note = folder + "/notes/note.txt";
  const SandboxRun run = run_deskd(
      daemon(), {"sandbox", "--desk", folder, "--read-only", probe_folder(), "--", probe("probe_write"), note});
  EXPECT_EQ(run.exit_status, 0) << run.describe();
  EXPECT_EQ(run.out, "ok 18\n") << run.describe();
  EXPECT_TRUE(fs::exists(note));
}

TEST_P(ToolsTest, ADeskUnderTmpStartsAndWrites) {
  char pattern[] = "/tmp/deskd-under-tmp-XXXXXX";
  ASSERT_NE(::mkdtemp(pattern), nullptr);
  const std::string folder = std::string(pattern) + "/desk";
  ASSERT_TRUE(fs::create_directory(folder));
  ::chmod(folder.c_str(), 0755);
  if (daemon() == Daemon::unprivileged) desk().hand_over(pattern);
  const std::string note = folder + "/scratch/note.txt";
  const SandboxRun run = run_deskd(
      daemon(), {"sandbox", "--desk", folder, "--read-only", probe_folder(), "--", probe("probe_write"), note});
  EXPECT_EQ(run.exit_status, 0) << run.describe();
  EXPECT_EQ(run.out, "ok 18\n") << run.describe();
  EXPECT_TRUE(fs::exists(note));
  fs::remove_all(pattern);
}

TEST_P(ToolsTest, DeskOptionCreatesMissingPlacesTheSandboxCanWrite) {
  // A desk with none of its writable places yet, owned as the daemon would own it.
  const std::string folder = desk().root() + "/fresh";
  ASSERT_TRUE(fs::create_directory(folder));
  ::chmod(folder.c_str(), 0755);
  if (daemon() == Daemon::unprivileged) desk().hand_over(folder);
  const std::string note = folder + "/scratch/note.txt";
  const SandboxRun run =
      run_deskd(daemon(), {"sandbox", "--desk", folder, "--read-only", probe_folder(), "--", probe("probe_write"), note});
  EXPECT_EQ(run.exit_status, 0) << run.describe();
  for (const char* place : {"memory", "notes", "scratch"})
    EXPECT_TRUE(fs::is_directory(folder + "/" + place)) << place;
  EXPECT_TRUE(fs::is_regular_file(folder + "/Memory.md"));
  EXPECT_EQ(read_host_file(folder + "/Memory.md"), "");
  EXPECT_EQ(run.out, "ok 18\n") << "the sandbox cannot write in the scratch/ deskd created\n"
                                << run.describe();
}

DESKD_FOR_BOTH_DAEMONS(ToolsTest);

}  // namespace
}  // namespace deskd::security_testing
