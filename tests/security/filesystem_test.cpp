// Reading what the user hid: directly, relative to the desk, through links planted in
// scratch/, through `..`, through /proc's magic links, and after trying to remove or
// loosen the masks. The secrets are world-readable on the host, so only a mask stops them.

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

#include "security/sandbox_runner.h"

namespace deskd::security_testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

class FilesystemTest : public SandboxTest {
 protected:
  // A mask refuses with EACCES, like the file tools' "permission denied".
  void expect_masked(const std::string& path) {
    SCOPED_TRACE("reading " + path);
    const SandboxRun run = sandbox({probe("probe_open"), path});
    ASSERT_EQ(run.exit_status, 0) << run.describe();
    EXPECT_EQ(first_line(run.out), "errno EACCES") << run.describe();
    EXPECT_THAT(run.out, Not(HasSubstr(desk().secret())));
  }

  // Paths through another process's /proc entry may also fail for ptrace-access reasons
  // before the mask is reached; any refusal will do, as long as the secret stays hidden.
  void expect_refused(const std::vector<std::string>& command, const std::string& what) {
    SCOPED_TRACE(what);
    const SandboxRun run = sandbox(command);
    ASSERT_EQ(run.exit_status, 0) << run.describe();
    EXPECT_THAT(first_line(run.out), StartsWith("errno ")) << run.describe();
    EXPECT_THAT(run.out, Not(HasSubstr(desk().secret())));
  }
};

TEST_P(FilesystemTest, ControlsNextToTheSecretsAreReadable) {
  // Without this the refusals below could come from a desk the sandbox does not show at all.
  SandboxRun run = sandbox({probe("probe_open"), desk().path("README.md")});
  EXPECT_EQ(run.out, "ok 24\nThis desk is for tests.\n") << run.describe();
  run = sandbox({probe("probe_open"), desk().path("public/key.txt")});
  EXPECT_EQ(run.out, "ok 7\npublic\n") << run.describe();
  run = sandbox({probe("probe_open"), desk().path("public")});
  EXPECT_EQ(first_line(run.out), "ok 2") << run.describe();
  EXPECT_THAT(run.out, HasSubstr("\nkey.txt\n"));
  EXPECT_THAT(run.out, HasSubstr("\nopen\n"));
}

TEST_P(FilesystemTest, HiddenFileCannotBeReadDirectly) { expect_masked(desk().path(".env")); }

TEST_P(FilesystemTest, HiddenFolderCannotBeListed) { expect_masked(desk().path("secrets")); }

TEST_P(FilesystemTest, FileInHiddenFolderCannotBeRead) {
  expect_masked(desk().path("secrets/key.txt"));
}

TEST_P(FilesystemTest, HiddenPathsRelativeToTheDeskCannotBeRead) {
  // The working folder is the desk, so these are the same paths, spelled as an agent would.
  expect_masked(".env");
  expect_masked("./secrets/key.txt");
}

TEST_P(FilesystemTest, HiddenPathsCannotBeReadThroughLinksPlantedInScratch) {
  expect_masked(desk().path("scratch/link-to-env"));
  expect_masked(desk().path("scratch/link-to-secrets"));
  expect_masked(desk().path("scratch/link-to-secrets/key.txt"));
}

TEST_P(FilesystemTest, HiddenPathsCannotBeReadThroughDotDot) {
  expect_masked(desk().path("scratch/../.env"));
  expect_masked(desk().path("public/../secrets/key.txt"));
  expect_masked(desk().path("memory/../notes/../secrets"));
}

TEST_P(FilesystemTest, HiddenPathsCannotBeReadThroughProcSelfRoot) {
  expect_masked("/proc/self/root" + desk().path(".env"));
  expect_masked("/proc/self/root" + desk().path("secrets/key.txt"));
}

TEST_P(FilesystemTest, HiddenPathsCannotBeReadThroughProcOneRoot) {
  expect_refused({probe("probe_open"), "/proc/1/root" + desk().path(".env")}, "/proc/1/root .env");
  expect_refused({probe("probe_open"), "/proc/1/root" + desk().path("secrets/key.txt")},
                 "/proc/1/root secrets/key.txt");
}

TEST_P(FilesystemTest, HiddenPathsCannotBeReadThroughProcPidCwd) {
  // exec keeps bash's pid, so /proc/$$ is the probe itself, named by number.
  const std::string open = probe("probe_open");
  for (const char* relative : {".env", "secrets/key.txt"}) {
    const SandboxRun run =
        sandbox({"/bin/bash", "-c", "exec " + open + " /proc/$$/cwd/" + relative});
    EXPECT_EQ(first_line(run.out), "errno EACCES") << relative << "\n" << run.describe();
    EXPECT_THAT(run.out, Not(HasSubstr(desk().secret())));
  }
  expect_refused({probe("probe_open"), "/proc/1/cwd/.env"}, "/proc/1/cwd/.env");
}

TEST_P(FilesystemTest, MasksSurviveAttemptsToUnmountThem) {
  const std::string syscall_probe = probe("probe_syscall");
  const std::string open = probe("probe_open");
  const std::string env = desk().path(".env");
  const std::string secrets = desk().path("secrets");
  // One sandbox: every attempt first, then the reads, in the same mount namespace.
  const std::string script =
      "echo \"umount2 file: $(" + syscall_probe + " umount2 " + env + ")\"\n" +
      "echo \"umount2 folder: $(" + syscall_probe + " umount2 " + secrets + ")\"\n" +
      "umount -l " + env + " 2>/dev/null; echo \"umount file: $?\"\n" +
      "umount -l " + secrets + " 2>/dev/null; echo \"umount folder: $?\"\n" +
      "echo \"read file: $(" + open + " " + env + ")\"\n" +
      "echo \"read folder: $(" + open + " " + secrets + "/key.txt)\"\n";
  const SandboxRun run = sandbox({"/bin/bash", "-c", script});
  ASSERT_EQ(run.exit_status, 0) << run.describe();
  EXPECT_THAT(run.out, HasSubstr("umount2 file: errno EPERM\n"));
  EXPECT_THAT(run.out, HasSubstr("umount2 folder: errno EPERM\n"));
  EXPECT_THAT(run.out, Not(HasSubstr("umount file: 0\n")));
  EXPECT_THAT(run.out, Not(HasSubstr("umount folder: 0\n")));
  EXPECT_THAT(run.out, HasSubstr("read file: errno EACCES\n"));
  EXPECT_THAT(run.out, HasSubstr("read folder: errno EACCES\n"));
  EXPECT_THAT(run.out, Not(HasSubstr(desk().secret()))) << run.describe();
}

TEST_P(FilesystemTest, MasksCannotBeLoosenedWithChmod) {
  const std::string open = probe("probe_open");
  const std::string script = "chmod 755 secrets 2>/dev/null; chmod 644 .env 2>/dev/null\n" +
                             open + " .env\n" + open + " secrets/key.txt\n";
  const SandboxRun run = sandbox({"/bin/bash", "-c", script});
  EXPECT_EQ(run.out, "errno EACCES\nerrno EACCES\n") << run.describe();
}

TEST_P(FilesystemTest, HiddenLinkIsMaskedWhereItLeads) {
  // --hide names a link; what must be masked is the file it resolves to, whichever name the
  // sandbox uses for it.
  write_host_file(desk().path("config-secret.txt"), desk().secret() + "\n");
  std::filesystem::create_symlink("config-secret.txt", desk().path("alias-of-config"));
  desk().hand_over(desk().path("config-secret.txt"));
  desk().hand_over(desk().path("alias-of-config"));
  for (const char* name : {"config-secret.txt", "alias-of-config"}) {
    const SandboxRun run = sandbox({probe("probe_open"), desk().path(name)},
                                   {"--hide", desk().path("alias-of-config")});
    EXPECT_EQ(first_line(run.out), "errno EACCES") << name << "\n" << run.describe();
    EXPECT_THAT(run.out, Not(HasSubstr(desk().secret())));
  }
}

TEST_P(FilesystemTest, DevHoldsOnlyTheMinimalDevices) {
  // A fresh /dev: no host disks or consoles to read from.
  const SandboxRun run = sandbox({probe("probe_open"), "/dev"});
  ASSERT_THAT(first_line(run.out), StartsWith("ok ")) << run.describe();
  for (const char* device : {"null", "zero", "full", "random", "urandom", "tty"})
    EXPECT_THAT(run.out, HasSubstr(std::string("\n") + device + "\n")) << run.describe();
  for (const char* device : {"vda", "sda", "mem", "kmsg", "console", "ttyS0", "loop0"})
    EXPECT_THAT(run.out, Not(HasSubstr(std::string("\n") + device + "\n"))) << run.describe();
}

DESKD_FOR_BOTH_DAEMONS(FilesystemTest);

}  // namespace
}  // namespace deskd::security_testing
