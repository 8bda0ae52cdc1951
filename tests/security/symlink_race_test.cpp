// One world per desk (issue 11): giving a desk's folder to its uid must not be a path walk
// that a link can redirect. A root deskd hands the writable places to the sandbox's uid
// before each launch; a racer on the host swaps scratch/sub between a real folder and a link
// to host places of someone else while `deskd sandbox --desk D -- true` runs again and
// again. Whatever the race, the host's files keep their owner and mode. Today the hand-over
// is an nftw() by path: a swap between its stat and its lchown of scratch/sub/NAME changes
// the owner of the host's NAME.

#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <iostream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "security/sandbox_runner.h"

namespace deskd::security_testing {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

// 1,000 launches took about 13 s on the development host with the racer beside them (about
// 5 s once deskd-init and the descriptor hand-over landed); the deadline keeps a slower host
// well inside the suite's 60 s, and the test prints how many launches it managed.
constexpr int kLaunches = 1000;
constexpr auto kDeadline = std::chrono::seconds(40);

struct Ownership {
  uid_t uid = 0;
  gid_t gid = 0;
  mode_t mode = 0;
  bool operator==(const Ownership&) const = default;
};

std::ostream& operator<<(std::ostream& stream, const Ownership& o) {
  return stream << "uid " << o.uid << " gid " << o.gid << " mode " << std::oct << (o.mode & 07777) << std::dec;
}

Ownership ownership_of(const std::string& path) {
  struct stat status {};
  if (::lstat(path.c_str(), &status) != 0) ADD_FAILURE() << "lstat " << path;
  return {status.st_uid, status.st_gid, status.st_mode};
}

void make_owned(const std::string& path, bool folder, mode_t mode, uid_t owner) {
  if (folder) {
    if (::mkdir(path.c_str(), mode) != 0) ADD_FAILURE() << "mkdir " << path;
  } else {
    write_host_file(path, "host file, not the desk's\n", mode);
  }
  ::chmod(path.c_str(), mode);
  if (::lchown(path.c_str(), owner, owner) != 0) ADD_FAILURE() << "lchown " << path;
}

int exchange_paths(const std::string& first, const std::string& second) {
  return ::renameat2(AT_FDCWD, first.c_str(), AT_FDCWD, second.c_str(), RENAME_EXCHANGE);
}

class SymlinkRaceTest : public SandboxTest {};

TEST_P(SymlinkRaceTest, SwappingALinkIntoScratchDuringLaunchesChangesNoHostFile) {
  // The host's places, outside the desk: a folder of the daemon's user (root, or the
  // unprivileged uid) holding a 0600 file and a 0700 folder named like the entries of the
  // real scratch/sub, so that a redirected walk finds exactly them; and a 0600 file.
  const uid_t host_owner = daemon_host_uid(daemon());
  const std::string host = desk().root() + "/host";
  make_owned(host, true, 0755, host_owner);
  make_owned(host + "/inner", false, 0600, host_owner);
  make_owned(host + "/deeper", true, 0700, host_owner);
  make_owned(host + "/deeper/file", false, 0600, host_owner);
  make_owned(host + "/lone-file", false, 0600, host_owner);
  const std::vector<std::string> targets = {host, host + "/inner", host + "/deeper", host + "/deeper/file",
                                            host + "/lone-file"};
  std::vector<Ownership> before;
  for (const auto& target : targets) before.push_back(ownership_of(target));

  // scratch/sub as the desk made it; the links wait beside the desk, on the same file system.
  const std::string sub = desk().path("scratch/sub");
  const std::string staging = desk().root() + "/staging";
  make_owned(staging, true, 0755, 0);
  make_owned(sub, true, 0755, sandbox_host_uid(daemon()));
  make_owned(sub + "/inner", false, 0644, sandbox_host_uid(daemon()));
  make_owned(sub + "/deeper", true, 0755, sandbox_host_uid(daemon()));
  make_owned(sub + "/deeper/file", false, 0644, sandbox_host_uid(daemon()));
  fs::create_symlink(host, staging + "/link-to-folder");
  fs::create_symlink(host + "/lone-file", staging + "/link-to-file");

  std::atomic<bool> stop{false};
  std::atomic<long> swaps{0};
  std::thread racer([&] {
    // Each round swaps the link in and back, so scratch/sub is the real folder when it ends.
    while (!stop.load()) {
      for (const char* link : {"/link-to-folder", "/link-to-file"}) {
        if (exchange_paths(sub, staging + link) == 0 && exchange_paths(sub, staging + link) == 0) swaps += 2;
      }
    }
  });

  const auto started = Clock::now();
  int launches = 0;
  int succeeded = 0;
  std::string last_failure;
  for (; launches < kLaunches && Clock::now() - started < kDeadline; ++launches) {
    const SandboxRun run = run_deskd(daemon(), {"sandbox", "--desk", desk().directory(), "--", "/bin/true"});
    if (run.exit_status == 0) ++succeeded;
    else last_failure = run.describe();
  }
  stop = true;
  racer.join();
  const auto elapsed = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - started);

  std::ostringstream summary;
  summary << launches << " launches in " << elapsed.count() << " ms, " << succeeded << " succeeded, "
          << swaps.load() << " swaps";
  SCOPED_TRACE(summary.str());
  for (size_t index = 0; index < targets.size(); ++index) {
    EXPECT_EQ(ownership_of(targets[index]), before[index])
        << "the host's " << targets[index] << " changed while the desk was handed to its uid: "
        << "the hand-over followed a link swapped into scratch/";
  }
  // Launches may fail closed when the walk meets a swap; some must have run for the race to
  // have been run at all.
  EXPECT_GT(succeeded, 0) << last_failure;
  EXPECT_GT(swaps.load(), 0);
  std::cerr << (launches < kLaunches ? "only " : "") << summary.str() << "\n";
}

DESKD_FOR_BOTH_DAEMONS(SymlinkRaceTest);

}  // namespace
}  // namespace deskd::security_testing
