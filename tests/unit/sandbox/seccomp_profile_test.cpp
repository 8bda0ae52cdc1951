// The seccomp profile, tested for real: each case forks a child that sets no_new_privs,
// installs the program exactly as the launcher's child does, tries one thing and reports
// through its exit status (0, an errno, or the signal that killed it).

#include "sandbox/seccomp_profile.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <linux/audit.h>
#include <linux/keyctl.h>
#include <linux/sched.h>
#include <linux/seccomp.h>
#include <linux/userfaultfd.h>
#include <pthread.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/personality.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/timex.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <vector>

namespace deskd::sandbox {
namespace {

// Exit statuses the child uses for the harness itself, above every errno value.
constexpr int kSetupFailed = 200;
constexpr int kInstallFailed = 201;
constexpr int kExecFailed = 202;

const SeccompProgram* shared_program() {
  static const std::optional<SeccompProgram> program = []() -> std::optional<SeccompProgram> {
    Result<SeccompProgram> built = SeccompProgram::build();
    if (!built.ok()) {
      ADD_FAILURE() << "SeccompProgram::build failed: " << built.error().what;
      return std::nullopt;
    }
    return std::move(built).value();
  }();
  return program ? &*program : nullptr;
}

std::string describe_wait_status(int status) {
  if (WIFEXITED(status)) {
    const int code = WEXITSTATUS(status);
    if (code == 0) return "succeeded";
    if (code == kSetupFailed) return "could not set no_new_privs";
    if (code == kInstallFailed) return "could not install the filter";
    if (code == kExecFailed) return "could not execute the program";
    const char* name = strerrorname_np(code);
    return "failed with " + (name != nullptr ? std::string(name) : std::to_string(code));
  }
  if (WIFSIGNALED(status)) {
    const char* name = sigabbrev_np(WTERMSIG(status));
    return "killed by SIG" +
           (name != nullptr ? std::string(name) : std::to_string(WTERMSIG(status)));
  }
  return "ended with wait status " + std::to_string(status);
}

int wait_for(pid_t pid) {
  int status = 0;
  while (waitpid(pid, &status, 0) == -1 && errno == EINTR) {
  }
  return status;
}

// Runs `attempt` (which returns 0 or an errno) in a forked child, under the profile unless
// `filtered` is false, and says how the child ended.
template <typename Attempt>
std::string run_child(Attempt attempt, bool filtered = true) {
  const SeccompProgram* program = shared_program();
  if (program == nullptr) return "no program";
  const pid_t pid = fork();
  if (pid == -1) return std::string("fork failed: ") + strerror(errno);
  if (pid == 0) {
    // A process that seccomp kills dumps core unless told not to.
    const rlimit no_core{0, 0};
    setrlimit(RLIMIT_CORE, &no_core);
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) _exit(kSetupFailed);
    if (filtered && program->install() != 0) _exit(kInstallFailed);
    _exit(attempt());
  }
  return describe_wait_status(wait_for(pid));
}

int errno_of(long result) { return result == -1 ? errno : 0; }

// clone and clone3 from inside the child: a new process that appears leaves at once.
int clone_outcome(long result) {
  if (result == 0) _exit(0);
  if (result < 0) return errno;
  return WIFEXITED(wait_for(static_cast<pid_t>(result))) ? 0 : ECHILD;
}

int try_clone(unsigned long flags) {
  return clone_outcome(syscall(SYS_clone, flags | SIGCHLD, nullptr, nullptr, nullptr, 0));
}

int try_clone3(std::uint64_t flags) {
  clone_args arguments{};
  arguments.flags = flags;
  arguments.exit_signal = SIGCHLD;
  return clone_outcome(syscall(SYS_clone3, &arguments, sizeof arguments));
}

// Runs the program on `data` as the kernel would, for what this host cannot make a real
// process do (int 0x80 needs i386 emulation, which many kernels switch off) and for sweeping
// many argument values quickly. Knows the instructions libseccomp emits; nullopt for others.
std::optional<std::uint32_t> evaluate(const sock_fprog& program, const seccomp_data& data) {
  std::uint32_t accumulator = 0;
  std::uint32_t index = 0;
  std::uint32_t memory[BPF_MEMWORDS] = {};
  const auto* bytes = reinterpret_cast<const unsigned char*>(&data);
  for (std::size_t pc = 0; pc < program.len; ++pc) {
    const sock_filter& instruction = program.filter[pc];
    const std::uint32_t k = instruction.k;
    const bool memory_slot = k < BPF_MEMWORDS;
    switch (instruction.code) {
      case BPF_LD | BPF_W | BPF_ABS:
        if (k % 4 != 0 || k + 4 > sizeof data) return std::nullopt;
        std::memcpy(&accumulator, bytes + k, 4);
        break;
      case BPF_LD | BPF_IMM: accumulator = k; break;
      case BPF_LDX | BPF_IMM: index = k; break;
      case BPF_LD | BPF_MEM:
        if (!memory_slot) return std::nullopt;
        accumulator = memory[k];
        break;
      case BPF_LDX | BPF_MEM:
        if (!memory_slot) return std::nullopt;
        index = memory[k];
        break;
      case BPF_ST:
        if (!memory_slot) return std::nullopt;
        memory[k] = accumulator;
        break;
      case BPF_STX:
        if (!memory_slot) return std::nullopt;
        memory[k] = index;
        break;
      case BPF_ALU | BPF_AND | BPF_K: accumulator &= k; break;
      case BPF_ALU | BPF_OR | BPF_K: accumulator |= k; break;
      case BPF_MISC | BPF_TAX: index = accumulator; break;
      case BPF_MISC | BPF_TXA: accumulator = index; break;
      case BPF_JMP | BPF_JA: pc += k; break;
      case BPF_JMP | BPF_JEQ | BPF_K:
        pc += accumulator == k ? instruction.jt : instruction.jf;
        break;
      case BPF_JMP | BPF_JGT | BPF_K:
        pc += accumulator > k ? instruction.jt : instruction.jf;
        break;
      case BPF_JMP | BPF_JGE | BPF_K:
        pc += accumulator >= k ? instruction.jt : instruction.jf;
        break;
      case BPF_JMP | BPF_JSET | BPF_K:
        pc += (accumulator & k) != 0 ? instruction.jt : instruction.jf;
        break;
      case BPF_RET | BPF_K: return k;
      case BPF_RET | BPF_A: return accumulator;
      default: return std::nullopt;
    }
  }
  return std::nullopt;
}

seccomp_data native_call(int number, std::uint64_t argument0 = 0, std::uint64_t argument1 = 0) {
  seccomp_data data{};
  data.nr = number;
  data.arch = AUDIT_ARCH_X86_64;
  data.args[0] = argument0;
  data.args[1] = argument1;
  return data;
}

constexpr std::uint32_t kAllow = SECCOMP_RET_ALLOW;
constexpr std::uint32_t kEperm = SECCOMP_RET_ERRNO | EPERM;
constexpr std::uint32_t kEnosys = SECCOMP_RET_ERRNO | ENOSYS;
constexpr std::uint32_t kKillProcess = SECCOMP_RET_KILL_PROCESS;

// ---------------------------------------------------------------------------------------

TEST(SeccompProgramTest, BuildsALoadableProgram) {
  Result<SeccompProgram> built = SeccompProgram::build();
  ASSERT_TRUE(built.ok()) << built.error().what;
  const sock_fprog* program = built->program();
  ASSERT_NE(program->filter, nullptr);
  EXPECT_GT(program->len, 10u);
  EXPECT_LE(program->len, BPF_MAXINSNS);
}

// Launches use the program compiled at build time; it must be the very same program.
TEST(SeccompProgramTest, PrecompiledProgramIsTheBuiltOne) {
  Result<SeccompProgram> built = SeccompProgram::build();
  ASSERT_TRUE(built.ok()) << built.error().what;
  const SeccompProgram precompiled = SeccompProgram::precompiled();
  ASSERT_EQ(precompiled.instructions().size(), built->instructions().size());
  for (std::size_t index = 0; index < precompiled.instructions().size(); ++index) {
    const sock_filter& expected = built->instructions()[index];
    const sock_filter& actual = precompiled.instructions()[index];
    EXPECT_TRUE(expected.code == actual.code && expected.jt == actual.jt && expected.jf == actual.jf &&
                expected.k == actual.k)
        << "instruction " << index;
  }
  EXPECT_EQ(precompiled.program()->len, precompiled.instructions().size());
}

TEST(SeccompProgramTest, MovedProgramStillPointsAtItsInstructions) {
  Result<SeccompProgram> built = SeccompProgram::build();
  ASSERT_TRUE(built.ok()) << built.error().what;
  const unsigned short length = built->program()->len;
  SeccompProgram moved(std::move(built).value());
  EXPECT_EQ(moved.program()->len, length);
  const pid_t pid = fork();
  ASSERT_NE(pid, -1);
  if (pid == 0) {
    prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
    _exit(moved.install() == 0 && syscall(1000) == -1 && errno == ENOSYS ? 0 : 1);
  }
  EXPECT_EQ(describe_wait_status(wait_for(pid)), "succeeded");
}

TEST(SeccompProgramTest, EvaluatesAsExpected) {
  const SeccompProgram* built = shared_program();
  ASSERT_NE(built, nullptr);
  const sock_fprog& program = *built->program();
  EXPECT_EQ(evaluate(program, native_call(SYS_getpid)), kAllow);
  EXPECT_EQ(evaluate(program, native_call(SYS_mount)), kEperm);
  EXPECT_EQ(evaluate(program, native_call(SYS_clone3)), kEnosys);
  EXPECT_EQ(evaluate(program, native_call(1000)), kEnosys);
  EXPECT_EQ(evaluate(program, native_call(0x40000000 | SYS_getpid)), kKillProcess);
  EXPECT_EQ(evaluate(program, native_call(0x40000000 | 1000)), kKillProcess);
  seccomp_data i386_getpid = native_call(20);
  i386_getpid.arch = AUDIT_ARCH_I386;
  EXPECT_EQ(evaluate(program, i386_getpid), kKillProcess);
}

// With reporting, every refusal (and only a refusal) goes to the listener: the program is
// the same but for its EPERM answers.
TEST(SeccompProgramTest, TheReportingProgramNotifiesExactlyWhatThePlainOneRefuses) {
  const SeccompProgram* built = shared_program();
  ASSERT_NE(built, nullptr);
  const SeccompProgram reporting = built->with_refusals_notified();
  const sock_fprog& plain = *built->program();
  const sock_fprog& notified = *reporting.program();
  for (int number : {SYS_getpid, SYS_mount, SYS_ptrace, SYS_bpf, SYS_io_uring_setup, SYS_clone3, 1000, SYS_read}) {
    const auto expected = evaluate(plain, native_call(number));
    const auto reported = expected == kEperm ? std::optional<std::uint32_t>(SECCOMP_RET_USER_NOTIF) : expected;
    EXPECT_EQ(evaluate(notified, native_call(number)), reported) << "system call " << number;
  }
  seccomp_data unix_socket = native_call(SYS_socket);
  unix_socket.args[0] = AF_UNIX;
  EXPECT_EQ(evaluate(plain, unix_socket), kEperm);
  EXPECT_EQ(evaluate(notified, unix_socket), SECCOMP_RET_USER_NOTIF);
  unix_socket.args[0] = AF_INET;
  EXPECT_EQ(evaluate(notified, unix_socket), kAllow);
  ASSERT_EQ(reporting.instructions().size(), built->instructions().size());
}

// Sweeps the argument rules: only the listed low-32-bit values get their answer, whatever
// the high 32 bits hold, and every other value gets the other answer.
TEST(SeccompProgramTest, ArgumentRulesHoldForEveryValue) {
  const SeccompProgram* built = shared_program();
  ASSERT_NE(built, nullptr);
  const sock_fprog& program = *built->program();
  std::mt19937_64 random(3);
  std::vector<std::uint64_t> values;
  for (std::uint64_t low = 0; low < 0x30000; ++low) values.push_back(low);
  for (std::uint64_t low : {0x5412u, 0x541cu, 0x80u, 0xffffffffu, 0x20008u, 0x7e020080u,
                            0x80801u, 0x80805u, 0x80802u}) {
    for (int bit = 0; bit < 32; ++bit) values.push_back(low ^ (std::uint64_t{1} << bit));
  }
  for (int i = 0; i < 50000; ++i) values.push_back(random());
  const std::size_t plain_values = values.size();
  for (std::size_t i = 0; i < plain_values; ++i) values.push_back(values[i] | (random() << 32));

  for (const std::uint64_t value : values) {
    const std::uint32_t low = static_cast<std::uint32_t>(value);
    const bool terminal_injection = low == TIOCSTI || low == TIOCLINUX;
    ASSERT_EQ(evaluate(program, native_call(SYS_ioctl, 1, value)),
              terminal_injection ? kEperm : kAllow)
        << std::hex << "ioctl 0x" << value;
    const bool harmless_persona =
        low == 0 || low == 8 || low == 0x20000 || low == 0x20008 || low == 0xffffffff;
    ASSERT_EQ(evaluate(program, native_call(SYS_personality, value)),
              harmless_persona ? kAllow : kEperm)
        << std::hex << "personality 0x" << value;
    ASSERT_EQ(evaluate(program, native_call(SYS_socket, value)),
              low == AF_VSOCK || low == AF_UNIX ? kEperm : kAllow)
        << std::hex << "socket 0x" << value;
    const std::uint32_t kind = low & ~static_cast<std::uint32_t>(SOCK_CLOEXEC | SOCK_NONBLOCK);
    ASSERT_EQ(evaluate(program, native_call(SYS_socketpair, AF_UNIX, value)),
              kind == SOCK_STREAM || kind == SOCK_SEQPACKET ? kAllow : kEperm)
        << std::hex << "socketpair type 0x" << value;
    const bool new_namespace =
        (low & (CLONE_NEWNS | CLONE_NEWUTS | CLONE_NEWIPC | CLONE_NEWUSER | CLONE_NEWPID |
                CLONE_NEWNET | CLONE_NEWCGROUP | CLONE_NEWTIME)) != 0;
    ASSERT_EQ(evaluate(program, native_call(SYS_clone, value)), new_namespace ? kEperm : kAllow)
        << std::hex << "clone 0x" << value;
    const bool new_listener = (low & SECCOMP_FILTER_FLAG_NEW_LISTENER) != 0;
    ASSERT_EQ(evaluate(program, native_call(SYS_seccomp, SECCOMP_SET_MODE_FILTER, value)),
              new_listener ? kEperm : kAllow)
        << std::hex << "seccomp flags 0x" << value;
  }
}

TEST(SeccompFilterTest, EverydayCallsWork) {
  EXPECT_EQ(run_child([] {
              int ends[2];
              if (pipe2(ends, O_CLOEXEC) != 0) return errno;
              char byte = 'x';
              if (write(ends[1], &byte, 1) != 1 || read(ends[0], &byte, 1) != 1) return errno;
              int pending = -1;
              if (ioctl(ends[0], FIONREAD, &pending) != 0) return errno;
              return getpid() > 0 && byte == 'x' && pending == 0 ? 0 : EIO;
            }),
            "succeeded");
}

TEST(SeccompFilterTest, UnknownSyscallFailsWithEnosys) {
  EXPECT_EQ(run_child([] { return errno_of(syscall(1000)); }), "failed with ENOSYS");
}

TEST(SeccompFilterTest, ForkAndThreadsWork) {
  EXPECT_EQ(run_child([] {
              const pid_t child = fork();
              if (child == 0) _exit(7);
              if (child < 0) return errno;
              const int status = wait_for(child);
              return WIFEXITED(status) && WEXITSTATUS(status) == 7 ? 0 : ECHILD;
            }),
            "succeeded");
  // glibc's pthread_create tries clone3 first and falls back to clone on ENOSYS.
  EXPECT_EQ(run_child([] {
              pthread_t thread;
              const int rc = pthread_create(
                  &thread, nullptr, [](void*) -> void* { return nullptr; }, nullptr);
              if (rc != 0) return rc;
              return pthread_join(thread, nullptr);
            }),
            "succeeded");
}

TEST(SeccompFilterTest, CloneWithNamespaceFlagsFailsWithEperm) {
  EXPECT_EQ(run_child([] { return try_clone(CLONE_NEWNS); }), "failed with EPERM");
  EXPECT_EQ(run_child([] { return try_clone(CLONE_NEWUSER); }), "failed with EPERM");
  EXPECT_EQ(run_child([] { return try_clone(CLONE_NEWNET | CLONE_NEWPID); }), "failed with EPERM");
  // The kernel reads only the low 32 bits of the flags.
  EXPECT_EQ(run_child([] { return try_clone((1UL << 32) | CLONE_NEWUSER); }), "failed with EPERM");
  EXPECT_EQ(run_child([] { return try_clone(0); }), "succeeded");
}

TEST(SeccompFilterTest, Clone3FailsWithEnosys) {
  EXPECT_EQ(run_child([] { return try_clone3(0); }), "failed with ENOSYS");
  EXPECT_EQ(run_child([] { return try_clone3(CLONE_NEWUSER); }), "failed with ENOSYS");
}

TEST(SeccompFilterTest, TerminalInjectionIoctlsFailWithEperm) {
  // fd -1: without the filter these would fail with EBADF.
  char byte = 'x';
  EXPECT_EQ(run_child([&] { return errno_of(ioctl(-1, TIOCSTI, &byte)); }), "failed with EPERM");
  EXPECT_EQ(run_child([&] { return errno_of(ioctl(-1, TIOCLINUX, &byte)); }), "failed with EPERM");
  // The kernel reads the request as 32 bits, so set high bits must not slip past.
  EXPECT_EQ(
      run_child([&] { return errno_of(syscall(SYS_ioctl, -1, 0x100000000UL | TIOCSTI, &byte)); }),
      "failed with EPERM");
  EXPECT_EQ(run_child([&] {
              return errno_of(syscall(SYS_ioctl, -1, 0xffffffff00000000UL | TIOCLINUX, &byte));
            }),
            "failed with EPERM");
  // Neighbouring requests reach the kernel.
  EXPECT_EQ(run_child([&] { return errno_of(ioctl(-1, TIOCSTI + 1, &byte)); }),
            "failed with EBADF");
  EXPECT_EQ(run_child([&] { return errno_of(ioctl(-1, TIOCSTI - 1, &byte)); }),
            "failed with EBADF");
}

TEST(SeccompFilterTest, OnlyHarmlessPersonasAreAllowed) {
  EXPECT_EQ(run_child([] { return errno_of(personality(0xffffffff)); }), "succeeded");
  EXPECT_EQ(run_child([] { return errno_of(personality(PER_LINUX)); }), "succeeded");
  EXPECT_EQ(run_child([] { return errno_of(personality(ADDR_NO_RANDOMIZE)); }),
            "failed with EPERM");
  EXPECT_EQ(run_child([] {
              return errno_of(syscall(SYS_personality, 0x100000000UL | ADDR_NO_RANDOMIZE));
            }),
            "failed with EPERM");
}

TEST(SeccompFilterTest, VsockAndUnixAreRefusedAndOtherSocketsWork) {
  EXPECT_EQ(run_child([] { return errno_of(socket(AF_VSOCK, SOCK_STREAM, 0)); }),
            "failed with EPERM");
  EXPECT_EQ(run_child([] { return errno_of(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)); }),
            "failed with EPERM");
  EXPECT_EQ(run_child([] {
              int pair[2];
              return errno_of(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair));
            }),
            "succeeded");
  EXPECT_EQ(run_child([] { return errno_of(socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0)); }),
            "succeeded");
}

// A datagram socket of a pair could be connect()ed or sendto() a host socket in view.
TEST(SeccompFilterTest, OnlyConnectedSocketpairsAreAllowed) {
  const int kSocketFlagCombinations[] = {0, SOCK_CLOEXEC, SOCK_NONBLOCK, SOCK_CLOEXEC | SOCK_NONBLOCK};
  for (const int kind : {SOCK_STREAM, SOCK_SEQPACKET}) {
    for (const int flags : kSocketFlagCombinations) {
      EXPECT_EQ(run_child([&] {
                  int pair[2];
                  return errno_of(socketpair(AF_UNIX, kind | flags, 0, pair));
                }),
                "succeeded")
          << "type " << kind << " flags " << flags;
    }
  }
  for (const int kind : {SOCK_DGRAM, SOCK_RAW, SOCK_RDM}) {
    for (const int flags : kSocketFlagCombinations) {
      EXPECT_EQ(run_child([&] {
                  int pair[2];
                  return errno_of(socketpair(AF_UNIX, kind | flags, 0, pair));
                }),
                "failed with EPERM")
          << "type " << kind << " flags " << flags;
    }
  }
}

TEST(SeccompFilterTest, X32SyscallKillsTheProcess) {
  constexpr long kX32SyscallBit = 0x40000000;
  EXPECT_EQ(run_child([] { return errno_of(syscall(kX32SyscallBit | SYS_getpid)); }),
            "killed by SIGSYS");
  EXPECT_EQ(run_child([] { return errno_of(syscall(kX32SyscallBit | SYS_mount)); }),
            "killed by SIGSYS");
}

#if defined(__x86_64__)
int i386_getpid() {
  // Without i386 emulation int 0x80 is a general protection fault; die of it quietly rather
  // than through a sanitizer's report.
  signal(SIGSEGV, SIG_DFL);
  long result = 20;  // getpid in the i386 table
  asm volatile("int $0x80" : "+a"(result) : : "r8", "r9", "r10", "r11", "memory");
  return result == getpid() ? 0 : EIO;
}

TEST(SeccompFilterTest, Int80KillsTheProcess) {
  const std::string unfiltered = run_child(i386_getpid, /*filtered=*/false);
  if (unfiltered != "succeeded") {
    GTEST_SKIP() << "this kernel has no i386 emulation: int 0x80 without the filter " << unfiltered
                 << " (SeccompProgramTest.EvaluatesAsExpected covers it)";
  }
  EXPECT_EQ(run_child(i386_getpid), "killed by SIGSYS");
}
#endif

// ---------------------------------------------------------------------------------------
// Denied calls. Where it is safe, the arguments are ones the kernel would answer with
// something other than EPERM, so EPERM shows the filter answered.

struct DeniedCall {
  const char* name;
  int (*attempt)();
};

void PrintTo(const DeniedCall& call, std::ostream* out) { *out << call.name; }

const DeniedCall kDeniedCalls[] = {
    {"unshare", [] { return errno_of(unshare(CLONE_NEWUSER)); }},
    {"setns", [] { return errno_of(setns(-1, 0)); }},
    {"mount", [] { return errno_of(mount("none", "/nonexistent-deskd", "tmpfs", 0, nullptr)); }},
    {"umount2", [] { return errno_of(umount2("/nonexistent-deskd", 0)); }},
    {"pivot_root",
     [] { return errno_of(syscall(SYS_pivot_root, "/nonexistent-deskd", "/nonexistent-deskd")); }},
    {"chroot", [] { return errno_of(chroot("/nonexistent-deskd")); }},
    {"open_tree",
     [] { return errno_of(syscall(SYS_open_tree, AT_FDCWD, "/nonexistent-deskd", 0)); }},
    {"fsopen", [] { return errno_of(syscall(SYS_fsopen, "tmpfs", 0)); }},
    {"ptrace", [] { return errno_of(ptrace(PTRACE_TRACEME, 0, nullptr, nullptr)); }},
    {"process_vm_readv",
     [] { return errno_of(process_vm_readv(getpid(), nullptr, 0, nullptr, 0, 0)); }},
    {"bpf", [] { return errno_of(syscall(SYS_bpf, -1, nullptr, 0)); }},
    {"perf_event_open",
     [] { return errno_of(syscall(SYS_perf_event_open, nullptr, 0, -1, -1, 0)); }},
    {"userfaultfd",
     [] { return errno_of(syscall(SYS_userfaultfd, O_CLOEXEC | UFFD_USER_MODE_ONLY)); }},
    {"io_uring_setup", [] { return errno_of(syscall(SYS_io_uring_setup, 1, nullptr)); }},
    {"keyctl",
     [] {
       return errno_of(syscall(SYS_keyctl, KEYCTL_GET_KEYRING_ID, KEY_SPEC_SESSION_KEYRING, 0));
     }},
    {"request_key",
     [] { return errno_of(syscall(SYS_request_key, "user", "deskd-none", nullptr, 0)); }},
    {"finit_module", [] { return errno_of(syscall(SYS_finit_module, -1, "", 0)); }},
    {"open_by_handle_at",
     [] { return errno_of(syscall(SYS_open_by_handle_at, AT_FDCWD, nullptr, 0)); }},
    {"name_to_handle_at",
     [] { return errno_of(syscall(SYS_name_to_handle_at, AT_FDCWD, "/", nullptr, nullptr, 0)); }},
    {"kcmp", [] { return errno_of(syscall(SYS_kcmp, getpid(), getpid(), 0, 0, 0)); }},
    {"pidfd_getfd", [] { return errno_of(syscall(SYS_pidfd_getfd, -1, 0, 0)); }},
    {"fanotify_init", [] { return errno_of(syscall(SYS_fanotify_init, 0, 0)); }},
    {"acct", [] { return errno_of(acct("/nonexistent-deskd/x")); }},
    {"swapon", [] { return errno_of(syscall(SYS_swapon, "/nonexistent-deskd", 0)); }},
    {"syslog",
     [] { return errno_of(syscall(SYS_syslog, 10 /* size of the buffer */, nullptr, 0)); }},
    {"sethostname", [] { return errno_of(syscall(SYS_sethostname, nullptr, 100000)); }},
    {"settimeofday", [] { return errno_of(syscall(SYS_settimeofday, nullptr, nullptr)); }},
    {"clock_settime", [] { return errno_of(syscall(SYS_clock_settime, CLOCK_REALTIME, nullptr)); }},
    {"adjtimex",
     [] {
       timex query{};
       return errno_of(adjtimex(&query));
     }},
    {"set_mempolicy", [] { return errno_of(syscall(SYS_set_mempolicy, 0, nullptr, 0)); }},
    {"iopl", [] { return errno_of(syscall(SYS_iopl, 0)); }},
};

class SeccompDeniedCallTest : public testing::TestWithParam<DeniedCall> {};

TEST_P(SeccompDeniedCallTest, FailsWithEperm) {
  EXPECT_EQ(run_child(GetParam().attempt), "failed with EPERM") << GetParam().name;
}

INSTANTIATE_TEST_SUITE_P(SeccompProfile, SeccompDeniedCallTest, testing::ValuesIn(kDeniedCalls),
                         [](const testing::TestParamInfo<DeniedCall>& call) {
                           return std::string(call.param.name);
                         });

// ---------------------------------------------------------------------------------------
// General programs still run under the filter.

struct ProgramRun {
  std::string ending;
  std::string output;
};

ProgramRun run_program(std::vector<std::string> arguments) {
  int ends[2];
  if (pipe2(ends, O_CLOEXEC) != 0) return {"pipe failed", ""};
  const SeccompProgram* program = shared_program();
  if (program == nullptr) return {"no program", ""};
  std::vector<char*> argv;
  for (std::string& argument : arguments) argv.push_back(argument.data());
  argv.push_back(nullptr);
  const pid_t pid = fork();
  if (pid == 0) {
    const rlimit no_core{0, 0};
    setrlimit(RLIMIT_CORE, &no_core);
    if (dup2(ends[1], STDOUT_FILENO) == -1) _exit(kSetupFailed);
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) _exit(kSetupFailed);
    if (program->install() != 0) _exit(kInstallFailed);
    execv(argv[0], argv.data());
    _exit(kExecFailed);
  }
  close(ends[1]);
  std::string output;
  char buffer[4096];
  for (;;) {
    const ssize_t got = read(ends[0], buffer, sizeof buffer);
    if (got > 0) {
      output.append(buffer, static_cast<std::size_t>(got));
    } else if (!(got == -1 && errno == EINTR)) {
      break;
    }
  }
  close(ends[0]);
  if (pid == -1) return {"fork failed", ""};
  return {describe_wait_status(wait_for(pid)), output};
}

std::optional<std::string> find_in_path(const std::string& name) {
  const char* path = std::getenv("PATH");
  std::istringstream folders(path != nullptr ? path : "/usr/bin:/bin");
  std::string folder;
  while (std::getline(folders, folder, ':')) {
    const std::string candidate = folder + "/" + name;
    if (access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return std::nullopt;
}

TEST(SeccompProgramsTest, TrueRuns) {
  ASSERT_EQ(access("/bin/true", X_OK), 0);
  EXPECT_EQ(run_program({"/bin/true"}).ending, "succeeded");
}

TEST(SeccompProgramsTest, BashPipelineRuns) {
  const std::optional<std::string> bash = find_in_path("bash");
  if (!bash) GTEST_SKIP() << "bash is not installed";
  const ProgramRun run = run_program({*bash, "-c", "echo $(( 6 * 7 )) | cat; (exit 3) || echo ok"});
  EXPECT_EQ(run.ending, "succeeded");
  EXPECT_EQ(run.output, "42\nok\n");
}

TEST(SeccompProgramsTest, PythonRuns) {
  const std::optional<std::string> python = find_in_path("python3");
  if (!python) GTEST_SKIP() << "python3 is not installed";
  const ProgramRun run = run_program({*python, "-c", "print(1)"});
  EXPECT_EQ(run.ending, "succeeded");
  EXPECT_EQ(run.output, "1\n");
}

// ---------------------------------------------------------------------------------------

// The words of `text` between the line starting with `from` and the next line starting with
// `to` (or the end).
std::vector<std::string> words_between(const std::string& text, const std::string& from,
                                       const std::string& to) {
  std::vector<std::string> words;
  std::istringstream lines(text);
  std::string line;
  bool inside = false;
  while (std::getline(lines, line)) {
    if (line.rfind(from, 0) == 0) {
      inside = true;
      continue;
    }
    if (inside && line.rfind(to, 0) == 0) break;
    if (!inside) continue;
    std::istringstream split(line);
    std::string word;
    while (split >> word) words.push_back(word);
  }
  return words;
}

bool contains(const std::vector<std::string>& words, const std::string& word) {
  return std::find(words.begin(), words.end(), word) != words.end();
}

TEST(SeccompDescriptionTest, ExplainsTheProfile) {
  const std::string text = describe_seccomp_profile();
  EXPECT_NE(text.find("ENOSYS"), std::string::npos);
  EXPECT_NE(text.find("EPERM"), std::string::npos);
  EXPECT_NE(text.find("x32"), std::string::npos);

  const std::vector<std::string> allowed = words_between(text, "Allowed", "Denied");
  const std::vector<std::string> denied =
      words_between(text, "Denied with EPERM", "Denied with ENOSYS");
  EXPECT_TRUE(contains(allowed, "read"));
  EXPECT_TRUE(contains(allowed, "execve"));
  EXPECT_FALSE(contains(allowed, "mount"));
  EXPECT_TRUE(contains(denied, "mount"));
  EXPECT_TRUE(contains(denied, "io_uring_setup"));
  EXPECT_FALSE(contains(denied, "read"));
  for (const std::string& name : allowed) EXPECT_FALSE(contains(denied, name)) << name;

  for (const char* argument_rule : {"clone:", "CLONE_NEWUSER", "ioctl:", "TIOCSTI", "TIOCLINUX",
                                    "personality:", "AF_VSOCK", "clone3", "socketpair:",
                                    "SOCK_SEQPACKET"}) {
    EXPECT_NE(text.find(argument_rule), std::string::npos) << argument_rule;
  }
}

TEST(SeccompDescriptionTest, AllowedListIsSortedAndWrapped) {
  const std::string text = describe_seccomp_profile();
  const std::vector<std::string> allowed = words_between(text, "Allowed", "Denied");
  EXPECT_GT(allowed.size(), 250u);
  EXPECT_TRUE(std::is_sorted(allowed.begin(), allowed.end()));
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) EXPECT_LE(line.size(), 88u) << line;
}

}  // namespace
}  // namespace deskd::sandbox
