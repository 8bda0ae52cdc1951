// The launcher from a multithreaded process, as deskd is: between clone and exec the
// child must not use glibc calls that coordinate with other threads (setgroups and
// setres[ug]id do, and would wait forever for threads the child does not have).

#include "sandbox/launcher.h"

#include <stdlib.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <mutex>
#include <thread>

#include <gtest/gtest.h>

#include "policy/confinement.h"

namespace deskd::sandbox {
namespace {

namespace fs = std::filesystem;

TEST(LauncherTest, LaunchesFromAProcessWithOtherThreads) {
  char pattern[] = "/var/tmp/deskd-launcher-XXXXXX";
  const fs::path root = ::mkdtemp(pattern);
  fs::permissions(root, fs::perms::owner_all | fs::perms::others_read | fs::perms::others_exec);
  auto spec = SandboxSpecBuilder(policy::Confinement::create(root, {}).value()).build().value();

  std::mutex mutex;
  std::condition_variable done;
  bool finished = false;
  std::vector<std::thread> busy;
  for (int index = 0; index < 4; ++index) {
    busy.emplace_back([&] {
      std::unique_lock lock(mutex);
      done.wait(lock, [&] { return finished; });
    });
  }
  const auto started = std::chrono::steady_clock::now();
  for (int launch = 0; launch < 10; ++launch) {
    auto process = launch_sandboxed(spec, {"/bin/true"});
    ASSERT_TRUE(process.ok()) << process.error().what;
    auto status = process->wait();
    ASSERT_TRUE(status.ok());
    EXPECT_EQ(*status, 0);
  }
  EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(20));
  {
    std::lock_guard lock(mutex);
    finished = true;
  }
  done.notify_all();
  for (auto& thread : busy) thread.join();
  fs::remove_all(root);
}

TEST(LauncherTest, ReportsAMissingCommandAndSetupFailures) {
  char pattern[] = "/var/tmp/deskd-launcher-XXXXXX";
  const fs::path root = ::mkdtemp(pattern);
  fs::permissions(root, fs::perms::owner_all | fs::perms::others_read | fs::perms::others_exec);
  auto spec = SandboxSpecBuilder(policy::Confinement::create(root, {}).value()).build().value();
  auto missing = launch_sandboxed(spec, {"no-such-command-anywhere"});
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(exit_status_for_launch_error(missing.error()), kNotFoundStatus);
  spec.working_directory = root / "gone";
  auto broken = launch_sandboxed(spec, {"/bin/true"});
  ASSERT_FALSE(broken.ok());
  EXPECT_EQ(exit_status_for_launch_error(broken.error()), kSetupFailedStatus);
  EXPECT_NE(broken.error().what.find("enter the desk folder"), std::string::npos) << broken.error().what;
  EXPECT_NE(broken.error().what.find((root / "gone").native()), std::string::npos) << broken.error().what;
  fs::remove_all(root);
}

}  // namespace
}  // namespace deskd::sandbox
