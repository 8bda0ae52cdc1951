// start_sandboxed as a desk's terminal uses it: where the child can share deskd's memory, a
// launch thread makes it and waits for its set-up (sandbox/background_start.h). These tests
// hold what that must not change: a sandbox lives on after its launch (the kernel's
// parent-death signal follows the thread that made it), the caller may close its streams
// at once, more starts than threads all finish, and a dropped start leaves no process.

#include <fcntl.h>
#include <poll.h>
#include <sys/types.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <filesystem>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "policy/confinement.h"
#include "sandbox/launcher.h"
#include "sandbox/memory_sharing_clone.h"
#include "sandbox/sandbox_spec.h"
#include "tests/unit/sandbox/pipe_text.h"

namespace deskd::sandbox {
namespace {

namespace fs = std::filesystem;

class BackgroundStartTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/var/tmp/deskd-background-XXXXXX";
    ASSERT_NE(::mkdtemp(pattern), nullptr);
    root_ = pattern;
    fs::permissions(root_, fs::perms::owner_all | fs::perms::others_read | fs::perms::others_exec);
    spec_.emplace(SandboxSpecBuilder(policy::Confinement::create(root_, {}).value()).build().value());
  }
  void TearDown() override {
    std::error_code ignored;
    fs::remove_all(root_, ignored);
  }

  fs::path root_;
  std::optional<SandboxSpec> spec_;
};

TEST_F(BackgroundStartTest, ASandboxLivesOnAfterItsLaunchAndKeepsTheStreamsItsCallerClosed) {
  int output[2];
  ASSERT_EQ(::pipe2(output, O_CLOEXEC), 0);
  // The command outlives its launch by far: a launch thread that ended after making it
  // would have had the kernel kill it (PR_SET_PDEATHSIG), and the output would stay empty.
  auto started = start_sandboxed(*spec_, {"/bin/sh", "-c", "sleep 0.5; echo alive"}, {-1, output[1], output[1]});
  ::close(output[1]);  // the caller's copy, at once, as a desk's terminal does
  ASSERT_TRUE(started.ok()) << started.error().what;
  auto running = std::move(*started).finish();
  ASSERT_TRUE(running.ok()) << running.error().what;
  EXPECT_EQ(pipe_test::read_to_end(output[0]), "alive\n");
  EXPECT_EQ(running->wait().value(), 0);
  ::close(output[0]);
}

TEST_F(BackgroundStartTest, MoreStartsAtOnceThanLaunchThreadsAllFinishWithTheirOwnOutcome) {
  constexpr int kStarts = 10;
  std::vector<StartingSandbox> starting;
  for (int index = 0; index < kStarts; ++index) {
    auto started = start_sandboxed(*spec_, {"/bin/sh", "-c", "exit " + std::to_string(index)});
    ASSERT_TRUE(started.ok()) << started.error().what;
    starting.push_back(std::move(*started));
  }
  for (int index = 0; index < kStarts; ++index) {
    pollfd report{starting[static_cast<std::size_t>(index)].report_fd(), POLLIN, 0};
    ASSERT_EQ(::poll(&report, 1, 20000), 1) << "start " << index << " never ended its set-up";
    auto running = std::move(starting[static_cast<std::size_t>(index)]).finish();
    ASSERT_TRUE(running.ok()) << running.error().what;
    EXPECT_EQ(running->wait().value(), index);
  }
  // A command that is not there fails at finish(), as before.
  auto missing = start_sandboxed(*spec_, {"no-such-command-anywhere"});
  ASSERT_TRUE(missing.ok());
  auto not_found = std::move(*missing).finish();
  ASSERT_FALSE(not_found.ok());
  EXPECT_EQ(exit_status_for_launch_error(not_found.error()), kNotFoundStatus);
}

TEST_F(BackgroundStartTest, StartsDroppedWhileWaitingOrSettingUpLeaveNoProcessBehind) {
  {
    std::vector<StartingSandbox> starting;
    for (int index = 0; index < 12; ++index) {
      auto started = start_sandboxed(*spec_, {"/bin/sleep", "30"});
      ASSERT_TRUE(started.ok()) << started.error().what;
      starting.push_back(std::move(*started));
    }
    // The first is surely made (pid() waits for its clone); the others are dropped where
    // they are: waiting for a thread, being set up, or set up.
    EXPECT_GT(starting.front().pid(), 0);
  }
  // No child of this process is left, running or unreaped, once the launch threads have
  // reaped those they were making when dropped (WNOWAIT: looked at, never reaped here).
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  int looked = 0;
  do {
    siginfo_t child{};
    looked = ::waitid(P_ALL, 0, &child, WEXITED | WNOHANG | WNOWAIT | __WALL);
    if (looked != 0) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  } while (std::chrono::steady_clock::now() < give_up);
  EXPECT_EQ(looked, -1);
  EXPECT_EQ(errno, ECHILD);
  // And the launch threads go on serving.
  auto after = start_sandboxed(*spec_, {"/bin/sh", "-c", "exit 3"});
  ASSERT_TRUE(after.ok()) << after.error().what;
  auto running = std::move(*after).finish();
  ASSERT_TRUE(running.ok()) << running.error().what;
  EXPECT_EQ(running->wait().value(), 3);
}

TEST_F(BackgroundStartTest, TheEventLoopsThreadKeepsItsErrnoWhileALaunchSharesMemory) {
  if (!can_clone_sharing_memory()) GTEST_SKIP() << "this build forks (sanitizers or an old kernel)";
  // The child shares the launching thread's TLS, errno with it: that thread is a launch
  // thread now, never the caller's.
  auto started = start_sandboxed(*spec_, {"/bin/sh", "-c", "exit 0"});
  ASSERT_TRUE(started.ok()) << started.error().what;
  const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(200);
  int changed = 0;
  while (std::chrono::steady_clock::now() < until) {
    errno = 12345;
    std::this_thread::yield();
    if (errno != 12345) ++changed;
  }
  EXPECT_EQ(changed, 0);
  auto running = std::move(*started).finish();
  ASSERT_TRUE(running.ok()) << running.error().what;
  EXPECT_EQ(running->wait().value(), 0);
}

}  // namespace
}  // namespace deskd::sandbox
