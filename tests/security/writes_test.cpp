// Writing: refused everywhere but the writable places (read-only mounts answer EROFS,
// landlock EACCES — either will do, as long as nothing changes on the host); inside them a
// write lands on the host at the same path, owned by the sandbox's uid, never by root.

#include <linux/landlock.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

#include "security/sandbox_runner.h"

namespace deskd::security_testing {
namespace {

using ::testing::AnyOf;
using ::testing::Eq;
using ::testing::StartsWith;

constexpr const char* kProbeLine = "deskd-probe-write\n";

// The kernel's landlock ABI version, 0 when it has none (or has it disabled).
long landlock_abi() {
  const long version =
      ::syscall(SYS_landlock_create_ruleset, nullptr, 0, LANDLOCK_CREATE_RULESET_VERSION);
  return version < 0 ? 0 : version;
}

class WritesTest : public SandboxTest {
 protected:
  // The write is refused and the host path keeps what it held (or stays absent).
  void expect_write_refused(const std::string& path, const std::string& host_path) {
    SCOPED_TRACE("writing " + path);
    const auto before = read_host_file(host_path);
    const SandboxRun run = sandbox({probe("probe_write"), path});
    ASSERT_EQ(run.exit_status, 0) << run.describe();
    EXPECT_THAT(first_line(run.out), AnyOf(Eq("errno EROFS"), Eq("errno EACCES")))
        << run.describe();
    EXPECT_EQ(read_host_file(host_path), before) << "the host file changed: " << host_path;
  }

  void expect_write_lands(const std::string& path) {
    SCOPED_TRACE("writing " + path);
    const SandboxRun run = sandbox({probe("probe_write"), path});
    EXPECT_EQ(run.out, "ok 18\n") << run.describe();
    EXPECT_EQ(read_host_file(path), kProbeLine);
    struct stat status {};
    ASSERT_EQ(::stat(path.c_str(), &status), 0) << path;
    EXPECT_EQ(status.st_uid, sandbox_host_uid(daemon())) << path;
    EXPECT_EQ(status.st_gid, sandbox_host_uid(daemon())) << path;
  }
};

TEST_P(WritesTest, DeskFilesOutsideTheWritablePlacesCannotBeWritten) {
  expect_write_refused(desk().path("README.md"), desk().path("README.md"));
  expect_write_refused(desk().path("new-file.txt"), desk().path("new-file.txt"));
  expect_write_refused(desk().path("public/key.txt"), desk().path("public/key.txt"));
  // World-writable on the host: only the sandbox's read-only view can refuse these.
  expect_write_refused(desk().path("public/open/shared.txt"),
                       desk().path("public/open/shared.txt"));
  expect_write_refused(desk().path("public/open/new.txt"), desk().path("public/open/new.txt"));
}

TEST_P(WritesTest, HostFilesCannotBeWritten) {
  const std::string name = unique_name("deskd-write");
  // /var/tmp is world-writable on the host; the others are root's, refused twice over.
  for (const std::string folder : {"/var/tmp", "", "/etc", "/usr/local"})
    expect_write_refused(folder + "/" + name, folder + "/" + name);
}

TEST_P(WritesTest, HiddenFileCannotBeOverwritten) {
  expect_write_refused(desk().path(".env"), desk().path(".env"));
  expect_write_refused(desk().path("secrets/new.txt"), desk().path("secrets/new.txt"));
}

TEST_P(WritesTest, HiddenPathsCannotBeMovedOrDeleted) {
  // Moving a mask away (or the secret out from under it) would unmask it for later reads.
  const SandboxRun run = sandbox(
      {"/bin/bash", "-c",
       "rm -f .env; rm -rf secrets; mv .env scratch/; mv secrets scratch/; "
       "ln .env scratch/hard-link; ls scratch; exit 0"});
  EXPECT_EQ(read_host_file(desk().path(".env")), "API_KEY=" + desk().secret() + "\n");
  EXPECT_EQ(read_host_file(desk().path("secrets/key.txt")), desk().secret() + "\n");
  // mv falls back to copying across mounts and may leave an empty, unreadable folder
  // behind; what matters is that no copy of the secret reached scratch/.
  for (const auto& entry : std::filesystem::recursive_directory_iterator(desk().path("scratch"))) {
    if (entry.is_symlink() || !entry.is_regular_file()) continue;  // the planted links
    EXPECT_EQ(read_host_file(entry.path()).value_or("").find(desk().secret()), std::string::npos)
        << entry.path() << "\n" << run.describe();
  }
}

TEST_P(WritesTest, LinkInScratchDoesNotLeadOutOfTheWritablePlaces) {
  expect_write_refused(desk().path("scratch/link-to-readme"), desk().path("README.md"));
}

TEST_P(WritesTest, FoldersOutsideTheWritablePlacesCannotBeMade) {
  const std::string host_folder = "/var/tmp/" + unique_name("deskd-mkdir");
  for (const std::string& folder : {desk().path("new-folder"), host_folder}) {
    const SandboxRun run = sandbox({probe("probe_write"), "--mkdir", folder});
    EXPECT_THAT(first_line(run.out), AnyOf(Eq("errno EROFS"), Eq("errno EACCES")))
        << folder << "\n" << run.describe();
    EXPECT_FALSE(std::filesystem::exists(folder)) << folder;
  }
}

TEST_P(WritesTest, WritesInTheWritablePlacesReachTheHostAtTheSamePath) {
  expect_write_lands(desk().path("scratch/out.txt"));
  expect_write_lands(desk().path("notes/note.md"));
  expect_write_lands(desk().path("memory/fact.md"));
  expect_write_lands(desk().path("Memory.md"));
}

TEST_P(WritesTest, FoldersCanBeMadeInScratch) {
  const std::string folder = desk().path("scratch/deep");
  const SandboxRun run = sandbox(
      {"/bin/bash", "-c", probe("probe_write") + " --mkdir " + folder + " && " +
                              probe("probe_write") + " " + folder + "/file.txt"});
  EXPECT_EQ(run.out, "ok 0\nok 18\n") << run.describe();
  EXPECT_EQ(read_host_file(folder + "/file.txt"), kProbeLine);
}

TEST_P(WritesTest, TmpAndDevShmAreWritableButPrivateToTheSandbox) {
  for (const std::string folder : {"/tmp", "/dev/shm"}) {
    const std::string path = folder + "/" + unique_name("deskd-private");
    const SandboxRun run = sandbox({probe("probe_write"), path});
    EXPECT_EQ(run.out, "ok 18\n") << path << "\n" << run.describe();
    EXPECT_FALSE(std::filesystem::exists(path)) << path << " leaked to the host";
  }
}

TEST_P(WritesTest, DevNullIsWritable) {
  const SandboxRun run = sandbox({probe("probe_write"), "/dev/null"});
  EXPECT_EQ(run.out, "ok 18\n") << run.describe();
}

TEST_P(WritesTest, LandlockRefusesWritesThatTheMountsWouldAllow) {
  if (landlock_abi() == 0) GTEST_SKIP() << "this kernel has no landlock";
  // The fresh /proc is mounted read-write and a process may rename itself through its own
  // comm file: only landlock, allowing writes beneath the writable places alone, refuses.
  const SandboxRun run = sandbox({probe("probe_write"), "/proc/self/comm"});
  EXPECT_EQ(run.out, "errno EACCES\n") << run.describe();
}

DESKD_FOR_BOTH_DAEMONS(WritesTest);

TEST(RootDaemonWritesTest, FilesBelongToTheUidAndGidAsked) {
  TestDesk desk(Daemon::root);
  constexpr uid_t kAskedUid = 4343;
  ASSERT_EQ(::chown(desk.path("scratch").c_str(), kAskedUid, kAskedUid), 0);
  const std::string path = desk.path("scratch/owned.txt");
  const SandboxRun run = run_in_sandbox(Daemon::root, desk, {probe("probe_write"), path},
                                        {"--uid", "4343", "--gid", "4343"});
  ASSERT_EQ(run.out, "ok 18\n") << run.describe();
  struct stat status {};
  ASSERT_EQ(::stat(path.c_str(), &status), 0);
  EXPECT_EQ(status.st_uid, kAskedUid);
  EXPECT_EQ(status.st_gid, kAskedUid);
}

}  // namespace
}  // namespace deskd::security_testing
