// The seccomp profile, as a program inside sees it: every denied syscall fails with EPERM,
// unknown ones (and clone3, so libc falls back to clone, whose flags can be checked) with
// ENOSYS, the x32 ABI and int 0x80 kill with SIGSYS, and ordinary calls still work. Also the
// util-linux tools an agent would reach for first: unshare and mount must fail.

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cctype>
#include <ostream>
#include <string>
#include <tuple>
#include <vector>

#include "security/sandbox_runner.h"

namespace deskd::security_testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

enum class Outcome { refused, unknown, killed, allowed };

struct SyscallCase {
  const char* name;
  Outcome expected;
};

// gtest prints parameters in failure messages.
void PrintTo(const SyscallCase& syscall, std::ostream* stream) { *stream << syscall.name; }

const SyscallCase kCases[] = {
    // Controls: a profile that refuses everything would pass every other case.
    {"getpid", Outcome::allowed},
    {"personality-query", Outcome::allowed},
    {"clone-plain", Outcome::allowed},
    // Mounts, old and new API.
    {"mount", Outcome::refused},
    {"umount2", Outcome::refused},
    {"pivot_root", Outcome::refused},
    {"fsopen", Outcome::refused},
    {"fsconfig", Outcome::refused},
    {"fsmount", Outcome::refused},
    {"fspick", Outcome::refused},
    {"mount_setattr", Outcome::refused},
    {"open_tree", Outcome::refused},
    {"move_mount", Outcome::refused},
    // Namespaces.
    {"unshare-user", Outcome::refused},
    {"unshare-mount", Outcome::refused},
    {"setns", Outcome::refused},
    {"clone-newns", Outcome::refused},
    {"clone-newuser", Outcome::refused},
    {"clone3", Outcome::unknown},
    // A desk may filter its own calls, but never answer another process's in its place.
    {"seccomp-filter", Outcome::allowed},
    {"seccomp-new-listener", Outcome::refused},
    // Host Unix sockets: no socket(AF_UNIX), whatever file a mount shows; connected pairs
    // stay, datagram pairs (which can sendto a path) go.
    {"socket-unix", Outcome::refused},
    {"socketpair-unix", Outcome::allowed},
    {"socketpair-unix-seqpacket", Outcome::allowed},
    {"socketpair-unix-dgram", Outcome::refused},
    {"socketpair-unix-dgram-flags", Outcome::refused},
    // Other processes and the kernel's big attack surfaces.
    {"ptrace", Outcome::refused},
    {"process_vm_readv", Outcome::refused},
    {"process_vm_writev", Outcome::refused},
    {"bpf", Outcome::refused},
    {"perf_event_open", Outcome::refused},
    {"userfaultfd", Outcome::refused},
    {"io_uring_setup", Outcome::refused},
    {"keyctl", Outcome::refused},
    {"add_key", Outcome::refused},
    {"request_key", Outcome::refused},
    // The machine itself.
    {"kexec_load", Outcome::refused},
    {"init_module", Outcome::refused},
    {"finit_module", Outcome::refused},
    {"delete_module", Outcome::refused},
    {"open_by_handle_at", Outcome::refused},
    {"name_to_handle_at", Outcome::refused},
    {"acct", Outcome::refused},
    {"swapon", Outcome::refused},
    {"swapoff", Outcome::refused},
    {"reboot", Outcome::refused},
    {"quotactl", Outcome::refused},
    {"iopl", Outcome::refused},
    {"ioperm", Outcome::refused},
    {"syslog", Outcome::refused},
    {"personality", Outcome::refused},
    // Terminals: typing into the user's shell.
    {"tiocsti", Outcome::refused},
    {"tiocsti-high-bits", Outcome::refused},
    {"tioclinux", Outcome::refused},
    // Other ABIs and numbers the profile does not know.
    {"x32-getpid", Outcome::killed},
    {"int80-getpid", Outcome::killed},
    {"unknown-1000", Outcome::unknown},
};

// Whether `int 0x80` reaches the kernel at all on this host: with IA32 emulation off (or a
// hypervisor without it) it faults with SIGSEGV before any filter can see it, so there is
// nothing for the sandbox to refuse.
bool host_has_int80() {
  static const bool available = [] {
    const std::string path = probe("probe_syscall");
    const pid_t child = ::fork();
    if (child == 0) {
      const int null = ::open("/dev/null", O_WRONLY);
      ::dup2(null, 1);
      ::dup2(null, 2);
      ::execl(path.c_str(), path.c_str(), "int80-getpid", static_cast<char*>(nullptr));
      ::_exit(127);
    }
    int status = 0;
    ::waitpid(child, &status, 0);
    return !(WIFSIGNALED(status) && WTERMSIG(status) == SIGSEGV);
  }();
  return available;
}

class SyscallTest : public ::testing::TestWithParam<std::tuple<Daemon, SyscallCase>> {};

TEST_P(SyscallTest, HasTheExpectedOutcome) {
  const auto [daemon, syscall] = GetParam();
  if (std::string(syscall.name) == "int80-getpid" && !host_has_int80())
    GTEST_SKIP() << "int 0x80 faults with SIGSEGV on this host even outside a sandbox "
                    "(no IA32 emulation)";
  TestDesk desk(daemon);
  // mount/umount2 aim at a mask: if they got through, that would be the escape.
  const SandboxRun run =
      run_in_sandbox(daemon, desk, {probe("probe_syscall"), syscall.name, desk.path(".env")});
  switch (syscall.expected) {
    case Outcome::allowed:
      EXPECT_EQ(run.out, "ok\n") << run.describe();
      break;
    case Outcome::refused:
      EXPECT_EQ(run.out, "errno EPERM\n") << run.describe();
      break;
    case Outcome::unknown:
      EXPECT_EQ(run.out, "errno ENOSYS\n") << run.describe();
      break;
    case Outcome::killed:
      EXPECT_EQ(run.exit_status, 128 + SIGSYS) << run.describe();
      EXPECT_EQ(run.out, "") << run.describe();
      // The probe announced the call on stderr first: it was the call that killed it.
      EXPECT_THAT(run.err, HasSubstr("calling " + std::string(syscall.name)));
      break;
  }
  if (syscall.expected != Outcome::killed) {
    EXPECT_EQ(run.exit_status, 0) << run.describe();
  }
}

INSTANTIATE_TEST_SUITE_P(
    Daemons, SyscallTest,
    ::testing::Combine(::testing::Values(Daemon::root, Daemon::unprivileged),
                       ::testing::ValuesIn(kCases)),
    [](const ::testing::TestParamInfo<std::tuple<Daemon, SyscallCase>>& parameter) {
      std::string name = daemon_name(std::get<0>(parameter.param)) + "_";
      for (const char* each = std::get<1>(parameter.param).name; *each != '\0'; ++each)
        name += std::isalnum(static_cast<unsigned char>(*each)) ? *each : '_';
      return name;
    });

class NamespaceToolsTest : public SandboxTest {};

TEST_P(NamespaceToolsTest, UnshareCannotMakeNamespaces) {
  // unshare(1) as an agent would type it; each variant must fail, none may run `true`.
  const std::vector<std::vector<std::string>> variants = {
      {"-U"}, {"-m"}, {"-r"}, {"-Ur"}, {"-n"}, {"-p", "-f"}, {"-U", "-m", "-p", "-f"}};
  for (const auto& flags : variants) {
    std::vector<std::string> command = {"/usr/bin/unshare"};
    command.insert(command.end(), flags.begin(), flags.end());
    command.insert(command.end(), {"/bin/echo", "escaped"});
    const SandboxRun run = sandbox(command);
    EXPECT_NE(run.exit_status, 0) << flags[0] << "\n" << run.describe();
    EXPECT_THAT(run.out, Not(HasSubstr("escaped"))) << flags[0];
  }
}

TEST_P(NamespaceToolsTest, MountCannotMountOverTheDesk) {
  const std::string script = "mount -t tmpfs none " + desk().directory() +
                             "/public && echo mounted; mount --bind /tmp " +
                             desk().path("public") + " && echo bound; exit 0";
  const SandboxRun run = sandbox({"/bin/bash", "-c", script});
  EXPECT_EQ(run.out, "") << run.describe();
}

DESKD_FOR_BOTH_DAEMONS(NamespaceToolsTest);

}  // namespace
}  // namespace deskd::security_testing
