// Limits for the desk as a whole, not per process: four processes of one desk cannot each
// take the desk's memory, and a fork bomb is gone before the desk's next command runs.
// Where deskd gets no cgroup (an unprivileged deskd without a delegated subtree, as on a
// hybrid host), memory can only be limited per process; that case is skipped, and says so,
// but memory a process can hold outside its address space is bounded there too.

#include <unistd.h>

#include <fstream>
#include <regex>
#include <sstream>
#include <string>

#include "security/sandbox_runner.h"

namespace deskd::security_testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

class DeskLimitsTest : public SandboxTest {
 protected:
  // Whether `deskd doctor`, run as this daemon, says the host limits desks as a whole.
  bool limits_whole_desks() const {
    const SandboxRun run = run_deskd(daemon(), {"doctor"});
    std::smatch line;
    static const std::regex limits(R"(\[(\w+)\]\s+per-desk limits\s+(.*))");
    return std::regex_search(run.out, line, limits) && line[1] == "ok";
  }
};

TEST_P(DeskLimitsTest, FourProcessesOfOneGigabyteDoNotFitInATwoGigabyteDesk) {
  if (!limits_whole_desks()) GTEST_SKIP() << "this host gives this deskd no cgroup: memory is limited per process only";
  // Each process fills 1 GiB (bytes of one value are written, not merely reserved) and says
  // so; under one 2 GiB limit for the desk, not all four can.
  const std::string fill = "import time\nb = b'\\x01' * (1 << 30)\nprint('filled', flush=True)\ntime.sleep(3)\n";
  const std::string script = "for i in 1 2 3 4; do python3 -c \"" + fill + "\" & done; wait";
  LaunchOptions options;
  options.timeout = std::chrono::seconds(50);
  const SandboxRun run = sandbox({"bash", "-c", script}, {"--memory", "2G"}, options);
  ASSERT_FALSE(run.timed_out) << run.describe();
  std::size_t filled = 0;
  for (std::size_t at = run.out.find("filled"); at != std::string::npos; at = run.out.find("filled", at + 1)) ++filled;
  EXPECT_LT(filled, 4u) << "four processes of 1 GiB each ran in a desk limited to 2 GiB\n" << run.describe();
  EXPECT_THAT(run.err, HasSubstr("Killed")) << run.describe();
}

TEST_P(DeskLimitsTest, AForkBombIsGoneBeforeTheNextCommandRuns) {
  // Two commands into the desk's terminal: a fork bomb, whose command ends a second later
  // while the bomb keeps forking (as a model's next call comes seconds later), then a count
  // of the processes the desk can see.
  const std::string input = desk().root() + "/commands";
  write_host_file(input, ":(){ :|:& };: ; sleep 1\necho processes=$(ls /proc | grep -c '^[0-9]')\n");
  LaunchOptions options;
  options.standard_input = input;
  options.timeout = std::chrono::seconds(50);
  std::vector<std::string> arguments = {"shell"};
  for (const auto& each : desk().sandbox_arguments()) arguments.push_back(each);
  arguments.insert(arguments.end(), {"--pids", "64"});
  const SandboxRun run = run_deskd(daemon(), arguments, options);
  ASSERT_FALSE(run.timed_out) << run.describe();
  EXPECT_THAT(run.out, HasSubstr("The desk reached its process limit (64 processes)")) << run.describe();
  std::smatch count;
  ASSERT_TRUE(std::regex_search(run.out, count, std::regex("processes=([0-9]+)"))) << run.describe();
  // init, bash, the subshell of $(...), ls and grep: nothing of the bomb.
  EXPECT_LE(std::stoi(count[1]), 8) << "the fork bomb outlived its command\n" << run.describe();
}

// Memory that RLIMIT_AS does not count — a memfd written but never mapped, detached SysV
// segments, tmpfs files in /tmp and /dev/shm — stays within the desk's limit too: with a
// cgroup it is charged to the desk; without one memfd_create and shmget are refused and the
// two tmpfs hold at most half the limit each.
TEST_P(DeskLimitsTest, MemoryHeldOutsideTheAddressSpaceStaysWithinTheLimit) {
  for (const std::string where : {"memfd", "sysv", "/tmp/pin", "/dev/shm/pin"}) {
    LaunchOptions options;
    options.timeout = std::chrono::seconds(50);
    const SandboxRun run = sandbox({probe("probe_pin"), where, "640"}, {"--memory", "256M"}, options);
    ASSERT_FALSE(run.timed_out) << where << "\n" << run.describe();
    EXPECT_THAT(run.out, Not(HasSubstr("done"))) << where << ": 640 MiB held under a 256 MiB limit\n" << run.describe();
    long held = 0;
    static const std::regex line("held ([0-9]+)");
    for (std::sregex_iterator each(run.out.begin(), run.out.end(), line), end; each != end; ++each)
      held = std::stol((*each)[1]);
    EXPECT_LE(held, 256) << where << "\n" << run.describe();
  }
}

// A sandbox sees its cgroup's path in /proc/self/cgroup (under cgroup v1 from deskd's own
// cgroup down): random names only, never deskd's host pid.
TEST_P(DeskLimitsTest, CgroupPathsNameNoHostPid) {
  const SandboxRun run = sandbox({"/bin/cat", "/proc/self/cgroup"});
  ASSERT_EQ(run.exit_status, 0) << run.describe();
  static const std::regex allowed(R"(\.\.|(instance|desk|sandbox)-[0-9a-f]{16})");
  std::istringstream lines(run.out);
  for (std::string each; std::getline(lines, each);) {
    const std::size_t path = each.find(':', each.find(':') + 1);
    ASSERT_NE(path, std::string::npos) << each;
    std::istringstream components(each.substr(path + 1));
    for (std::string component; std::getline(components, component, '/');) {
      if (component.empty()) continue;
      EXPECT_TRUE(std::regex_match(component, allowed)) << "'" << component << "' in " << each << "\n" << run.out;
    }
  }
}

DESKD_FOR_BOTH_DAEMONS(DeskLimitsTest);

}  // namespace
}  // namespace deskd::security_testing
