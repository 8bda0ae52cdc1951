// The sandboxed process itself: no privilege left, no inherited fds, no daemon variables,
// a /proc that shows only its own processes, its own session — and nothing of it left on
// the host once it has exited or deskd has died.

#include <signal.h>

#include <chrono>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "security/sandbox_runner.h"

namespace deskd::security_testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

// The value of a probe_ids line ("CapEff:\t0000..." → "0000..."), tabs turned to spaces.
std::string field(const std::string& output, const std::string& key) {
  std::istringstream lines(output);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind(key, 0) != 0) continue;
    std::string value = line.substr(key.size());
    for (char& each : value)
      if (each == '\t') each = ' ';
    const auto start = value.find_first_not_of(' ');
    return start == std::string::npos ? "" : value.substr(start);
  }
  return "<missing " + key + ">";
}

std::vector<std::string> words(const std::string& text) {
  std::istringstream stream(text);
  std::vector<std::string> result;
  for (std::string word; stream >> word;) result.push_back(word);
  return result;
}

class ProcessTest : public SandboxTest {};

TEST_P(ProcessTest, HoldsNoCapabilityAndRunsFiltered) {
  const SandboxRun run = sandbox({probe("probe_ids")});
  ASSERT_EQ(run.exit_status, 0) << run.describe();
  for (const char* set : {"CapInh:", "CapPrm:", "CapEff:", "CapBnd:", "CapAmb:"})
    EXPECT_EQ(field(run.out, set), "0000000000000000") << set << "\n" << run.out;
  EXPECT_EQ(field(run.out, "NoNewPrivs:"), "1") << run.out;
  EXPECT_EQ(field(run.out, "Seccomp:"), "2") << run.out;
}

TEST_P(ProcessTest, IsNotRootInsideTheSandbox) {
  const SandboxRun run = sandbox({probe("probe_ids")});
  for (const char* ids : {"Uid:", "Gid:"}) {
    for (const auto& id : words(field(run.out, ids)))
      EXPECT_NE(id, "0") << ids << "\n" << run.out;
  }
  for (const auto& group : words(field(run.out, "Groups:")))
    EXPECT_NE(group, "0") << run.out;
}

TEST_P(ProcessTest, InheritsOnlyStandardFds) {
  SandboxRun run = sandbox({probe("probe_ids")});
  EXPECT_EQ(field(run.out, "fds"), "0 1 2") << run.describe();
  // The launcher had a file, a pipe and a socket open, none close-on-exec.
  LaunchOptions options;
  options.open_extra_fds = true;
  run = sandbox({probe("probe_ids")}, {}, options);
  EXPECT_EQ(field(run.out, "fds"), "0 1 2") << run.describe();
}

TEST_P(ProcessTest, ProcShowsOnlyTheSandboxProcesses) {
  const SandboxRun run = sandbox({probe("probe_ids")});
  const auto pids = words(field(run.out, "pids"));
  const std::set<std::string> seen(pids.begin(), pids.end());
  EXPECT_TRUE(seen.count("1")) << "no init as pid 1: " << run.out;
  EXPECT_TRUE(seen.count(field(run.out, "pid"))) << run.out;
  EXPECT_NE(field(run.out, "pid"), "1") << "the command must not be pid 1 (init reaps)";
  // init, the probe, perhaps a helper of the launcher: never the host's dozens.
  EXPECT_LE(pids.size(), 4U) << run.out;
}

TEST_P(ProcessTest, RunsInItsOwnSessionInTheDesk) {
  const SandboxRun run = sandbox({probe("probe_ids")});
  // 0: the session's leader is outside the pid namespace, i.e. deskd's session.
  EXPECT_NE(field(run.out, "sid"), "0") << run.out;
  EXPECT_EQ(field(run.out, "cwd"), desk().directory()) << run.out;
  EXPECT_EQ(field(run.out, "hostname"), "deskd") << run.out;
}

TEST_P(ProcessTest, EnvironmentHoldsNoDaemonVariables) {
  const SandboxRun run = sandbox({"/usr/bin/env"});
  ASSERT_EQ(run.exit_status, 0) << run.describe();
  const std::set<std::string> allowed = {"PATH", "HOME", "LANG", "TERM", "TZ"};
  std::istringstream lines(run.out);
  for (std::string line; std::getline(lines, line);)
    EXPECT_TRUE(allowed.count(line.substr(0, line.find('=')))) << "unexpected: " << line;
  EXPECT_THAT(run.out, HasSubstr("HOME=" + desk().directory() + "\n"));
  EXPECT_THAT(run.out, HasSubstr("TERM=dumb\n"));
  EXPECT_THAT(run.out, Not(HasSubstr("daemon-only-value")));
  EXPECT_THAT(run.out, Not(HasSubstr("sk-ant-test")));
}

TEST_P(ProcessTest, EnvironmentAllowlistCopiesOnlyTheNamedVariables) {
  const SandboxRun run = sandbox({"/usr/bin/env"}, {"--env", "DESKD_TEST_SECRET"});
  EXPECT_THAT(run.out, HasSubstr("DESKD_TEST_SECRET=daemon-only-value\n")) << run.describe();
  EXPECT_THAT(run.out, Not(HasSubstr("sk-ant-test")));
}

TEST_P(ProcessTest, OrphansAreReapedByInit) {
  // Each subshell exits at once, so its `sleep` is reparented to pid 1, which must reap it.
  const SandboxRun run = sandbox(
      {"/bin/bash", "-c",
       "for i in $(seq 20); do ( /bin/sleep 0.05 & ); done; /bin/sleep 0.5; "
       "grep -l '^State:.*Z' /proc/[0-9]*/status 2>/dev/null | wc -l"});
  EXPECT_EQ(run.out, "0\n") << run.describe();
}

TEST_P(ProcessTest, NothingIsLeftOnTheHostAfterTheCommandExits) {
  const std::string marker = unique_name("deskd-daemon-marker");
  const std::string pid_file = desk().path("scratch/daemon.pid");
  const SandboxRun run = sandbox({probe("probe_daemonize"), pid_file, marker});
  EXPECT_THAT(run.out, StartsWith("daemonized ")) << run.describe();
  EXPECT_TRUE(read_host_file(pid_file).has_value()) << "the grandchild never ran";
  EXPECT_FALSE(run.output_left_open) << "a sandbox process still held deskd's stdout";
  const auto left = wait_for_no_processes_with(marker, std::chrono::seconds(2));
  EXPECT_TRUE(left.empty()) << "outlived the sandbox:\n" << describe_processes(left);
  for (pid_t pid : left) ::kill(pid, SIGKILL);  // this test's own leftovers
}

TEST_P(ProcessTest, NothingIsLeftOnTheHostWhenDeskdIsKilled) {
  const std::string marker = unique_name("deskd-orphan-marker");
  const std::string pid_file = desk().path("scratch/daemon.pid");
  LaunchOptions options;
  options.timeout = std::chrono::milliseconds(2500);  // then the runner kills deskd
  const SandboxRun run = sandbox(
      {"/bin/bash", "-c",
       probe("probe_daemonize") + " " + pid_file + " " + marker + "; exec /bin/sleep 30"},
      {}, options);
  EXPECT_TRUE(run.timed_out) << run.describe();
  EXPECT_TRUE(read_host_file(pid_file).has_value()) << "the grandchild never ran";
  const auto left = wait_for_no_processes_with(marker, std::chrono::seconds(3));
  EXPECT_TRUE(left.empty()) << "outlived a killed deskd:\n" << describe_processes(left);
  for (pid_t pid : left) ::kill(pid, SIGKILL);
}

DESKD_FOR_BOTH_DAEMONS(ProcessTest);

}  // namespace
}  // namespace deskd::security_testing
