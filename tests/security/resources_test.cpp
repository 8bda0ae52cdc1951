// Limits: a fork bomb and a memory hog end inside the sandbox (by refusal or by a kill —
// either will do) while the test process, standing in for deskd, keeps working; file-size,
// open-files and core limits reach the command. The probes are bounded themselves, so even
// a sandbox without limits cannot take the host down.

#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <regex>
#include <string>

#include "security/sandbox_runner.h"

namespace deskd::security_testing {
namespace {

using ::testing::AnyOf;
using ::testing::Eq;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

// The test process can still fork and get memory: the limits hit the sandbox, not the host.
void expect_host_healthy() {
  const pid_t child = ::fork();
  ASSERT_GE(child, 0) << "fork failed after the sandbox ran: " << std::strerror(errno);
  if (child == 0) ::_exit(0);
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  constexpr size_t kSize = size_t{64} << 20;
  void* block = ::mmap(nullptr, kSize, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(block, MAP_FAILED) << std::strerror(errno);
  std::memset(block, 0x5a, kSize);
  ::munmap(block, kSize);
}

// The last "reached <MiB>" the memory hog printed, 0 if none.
long last_reached(const std::string& output) {
  long reached = 0;
  static const std::regex line("reached ([0-9]+)");
  for (std::sregex_iterator each(output.begin(), output.end(), line), end; each != end; ++each)
    reached = std::stol((*each)[1]);
  return reached;
}

class ResourcesTest : public SandboxTest {};

TEST_P(ResourcesTest, ForkBombEndsInsideTheSandbox) {
  LaunchOptions options;
  options.timeout = std::chrono::seconds(40);
  const SandboxRun run = sandbox({probe("probe_forkbomb"), "2000"}, {"--pids", "64"}, options);
  ASSERT_FALSE(run.timed_out) << run.describe();
  std::smatch match;
  static const std::regex report("forked ([0-9]+) ");
  if (std::regex_search(run.out, match, report)) {
    // init and the bomb itself count against the 64 too.
    EXPECT_LT(std::stol(match[1]), 64) << run.describe();
    EXPECT_THAT(run.out, Not(HasSubstr("limit"))) << "the bomb reached its own bound";
  } else {
    // No report: the sandbox killed the bomb; it must still have ended, with a signal.
    EXPECT_GT(run.exit_status, 128) << run.describe();
  }
  expect_host_healthy();
}

TEST_P(ResourcesTest, MemoryHogEndsInsideTheSandbox) {
  LaunchOptions options;
  options.timeout = std::chrono::seconds(40);
  const SandboxRun run = sandbox({probe("probe_memhog"), "1536"}, {"--memory", "256M"}, options);
  ASSERT_FALSE(run.timed_out) << run.describe();
  EXPECT_THAT(run.out, Not(HasSubstr("done"))) << run.describe();
  EXPECT_LE(last_reached(run.out), 256) << run.describe();
  expect_host_healthy();
}

TEST_P(ResourcesTest, FileSizeLimitStopsBigWrites) {
  const std::string path = desk().path("scratch/big.bin");
  const SandboxRun run =
      sandbox({probe("probe_write"), path, "4000000"}, {"--file-size", "1M"});
  // SIGXFSZ kills the probe (128+25) unless the sandbox ignores it, then write says EFBIG.
  EXPECT_THAT(run.exit_status, AnyOf(Eq(0), Eq(128 + SIGXFSZ))) << run.describe();
  if (run.exit_status == 0) {
    EXPECT_THAT(run.out, StartsWith("errno EFBIG")) << run.describe();
  }
  struct stat status {};
  ASSERT_EQ(::stat(path.c_str(), &status), 0);
  EXPECT_LE(status.st_size, 1 << 20);
}

TEST_P(ResourcesTest, TmpSizeBoundsWhatTheDeskWritesToTmpAndDevShm) {
  // 12 MiB into an 8 MiB /tmp and /dev/shm: the tmpfs is full, the host's memory is spared.
  for (const std::string folder : {"/tmp", "/dev/shm"}) {
    const SandboxRun run =
        sandbox({"/bin/sh", "-c",
                 "head -c 12582912 /dev/zero > " + folder + "/fill; echo status $?; wc -c < " + folder + "/fill"},
                {"--tmp-size", "8M"});
    EXPECT_THAT(run.out, Not(HasSubstr("status 0"))) << run.describe();
    EXPECT_THAT(run.err, HasSubstr("No space left")) << run.describe();
  }
}

TEST_P(ResourcesTest, OpenFilesLimitReachesTheCommand) {
  const SandboxRun run = sandbox({"/bin/bash", "-c", "ulimit -n"}, {"--open-files", "32"});
  EXPECT_EQ(run.out, "32\n") << run.describe();
}

// A busy deskd (hundreds of desks, a thousand clients) holds descriptors numbered past a
// desk's open-files limit; its sandboxes still start, and the command gets the desk's limit
// and none of deskd's descriptors.
TEST_P(ResourcesTest, ASandboxStartsFromADaemonHoldingMoreDescriptorsThanTheDesksLimit) {
  LaunchOptions options;
  options.crowd_descriptors = 1200;
  const SandboxRun run = sandbox({"/bin/bash", "-c", "ulimit -n; ls /proc/self/fd | wc -l"}, {"--open-files", "1024"},
                                 options);
  EXPECT_EQ(run.exit_status, 0) << run.describe();
  // 0, 1, 2 and the one ls opens to list them.
  EXPECT_EQ(run.out, "1024\n4\n") << run.describe();
}

TEST_P(ResourcesTest, CoreDumpsAreOff) {
  const SandboxRun run = sandbox({"/bin/bash", "-c", "ulimit -c"});
  EXPECT_EQ(run.out, "0\n") << run.describe();
}

DESKD_FOR_BOTH_DAEMONS(ResourcesTest);

}  // namespace
}  // namespace deskd::security_testing
