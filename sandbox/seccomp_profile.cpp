#include "sandbox/seccomp_profile.h"

#include <linux/seccomp.h>
#include <sched.h>
#include <seccomp.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <optional>
#include <span>
#include <string_view>
#include <utility>

#include "base/unique_fd.h"

namespace deskd::sandbox {

namespace {

// ---------------------------------------------------------------------------------------
// The tables. build() compiles them and describe_seccomp_profile() prints them, so the
// text can never disagree with the filter. Names are x86_64 names; a name this libseccomp
// does not know is skipped by both.
// ---------------------------------------------------------------------------------------

// Docker's default profile, as far as it allows calls unconditionally on x86_64, minus
// adjtimex, clock_adjtime, io_uring_* and name_to_handle_at (denied below) and minus
// ioctl, personality, socket and socketpair (decided by argument, below). Added: arch_prctl and
// modify_ldt (Docker allows them on x86 only), and newer calls that reach nothing the calls
// they extend do not (fchmodat2, cachestat, map_shadow_stack, the futex2 calls, mseal).
// clang-format off
constexpr const char* kAllowedSyscalls[] = {
    "accept", "accept4", "access", "alarm", "arch_prctl", "bind", "brk", "cachestat",
    "capget", "capset", "chdir", "chmod", "chown", "clock_getres", "clock_gettime",
    "clock_nanosleep", "close", "close_range", "connect", "copy_file_range", "creat", "dup",
    "dup2", "dup3", "epoll_create", "epoll_create1", "epoll_ctl", "epoll_ctl_old",
    "epoll_pwait", "epoll_pwait2", "epoll_wait", "epoll_wait_old", "eventfd", "eventfd2",
    "execve", "execveat", "exit", "exit_group", "faccessat", "faccessat2", "fadvise64",
    "fallocate", "fanotify_mark", "fchdir", "fchmod", "fchmodat", "fchmodat2", "fchown",
    "fchownat", "fcntl", "fdatasync", "fgetxattr", "flistxattr", "flock", "fork",
    "fremovexattr", "fsetxattr", "fstat", "fstatfs", "fsync", "ftruncate", "futex",
    "futex_requeue", "futex_wait", "futex_waitv", "futex_wake", "futimesat", "getcpu",
    "getcwd", "getdents", "getdents64", "getegid", "geteuid", "getgid", "getgroups",
    "getitimer", "getpeername", "getpgid", "getpgrp", "getpid", "getppid", "getpriority",
    "getrandom", "getresgid", "getresuid", "getrlimit", "get_robust_list", "getrusage",
    "getsid", "getsockname", "getsockopt", "get_thread_area", "gettid", "gettimeofday",
    "getuid", "getxattr", "inotify_add_watch", "inotify_init", "inotify_init1",
    "inotify_rm_watch", "io_cancel", "io_destroy", "io_getevents", "io_pgetevents",
    "ioprio_get", "ioprio_set", "io_setup", "io_submit", "kill", "landlock_add_rule",
    "landlock_create_ruleset", "landlock_restrict_self", "lchown", "lgetxattr", "link",
    "linkat", "listen", "listxattr", "llistxattr", "lremovexattr", "lseek", "lsetxattr",
    "lstat", "madvise", "map_shadow_stack", "membarrier", "memfd_create", "memfd_secret",
    "mincore", "mkdir", "mkdirat", "mknod", "mknodat", "mlock", "mlock2", "mlockall", "mmap",
    "modify_ldt", "mprotect", "mq_getsetattr", "mq_notify", "mq_open", "mq_timedreceive",
    "mq_timedsend", "mq_unlink", "mremap", "mseal", "msgctl", "msgget", "msgrcv", "msgsnd",
    "msync", "munlock", "munlockall", "munmap", "nanosleep", "newfstatat", "open", "openat",
    "openat2", "pause", "pidfd_open", "pidfd_send_signal", "pipe", "pipe2", "pkey_alloc",
    "pkey_free", "pkey_mprotect", "poll", "ppoll", "prctl", "pread64", "preadv", "preadv2",
    "prlimit64", "process_mrelease", "pselect6", "pwrite64", "pwritev", "pwritev2", "read",
    "readahead", "readlink", "readlinkat", "readv", "recvfrom", "recvmmsg", "recvmsg",
    "remap_file_pages", "removexattr", "rename", "renameat", "renameat2", "restart_syscall",
    "rmdir", "rseq", "rt_sigaction", "rt_sigpending", "rt_sigprocmask", "rt_sigqueueinfo",
    "rt_sigreturn", "rt_sigsuspend", "rt_sigtimedwait", "rt_tgsigqueueinfo",
    "sched_getaffinity", "sched_getattr", "sched_getparam", "sched_get_priority_max",
    "sched_get_priority_min", "sched_getscheduler", "sched_rr_get_interval",
    "sched_setaffinity", "sched_setattr", "sched_setparam", "sched_setscheduler",
    "sched_yield", "select", "semctl", "semget", "semop", "semtimedop", "sendfile",
    "sendmmsg", "sendmsg", "sendto", "setfsgid", "setfsuid", "setgid", "setgroups",
    "setitimer", "setpgid", "setpriority", "setregid", "setresgid", "setresuid", "setreuid",
    "setrlimit", "set_robust_list", "setsid", "setsockopt", "set_thread_area",
    "set_tid_address", "setuid", "setxattr", "shmat", "shmctl", "shmdt", "shmget", "shutdown",
    "sigaltstack", "signalfd", "signalfd4", "splice", "stat", "statfs", "statx",
    "symlink", "symlinkat", "sync", "sync_file_range", "syncfs", "sysinfo", "tee", "tgkill",
    "time", "timer_create", "timer_delete", "timer_getoverrun", "timer_gettime",
    "timer_settime", "timerfd_create", "timerfd_gettime", "timerfd_settime", "times", "tkill",
    "truncate", "umask", "uname", "unlink", "unlinkat", "utime", "utimensat", "utimes",
    "vfork", "vmsplice", "wait4", "waitid", "write", "writev",
};
// clang-format on

struct RefusedGroup {
  const char* reason;
  int error_number;
  std::initializer_list<const char*> syscalls;
};

// EPERM says "you may not" (and programs report it as such); ENOSYS for clone3 says "not
// here", which makes glibc fall back to clone, whose flags a filter can read (clone3 passes
// them in memory that seccomp cannot see).
const RefusedGroup kRefusedGroups[] = {
    {"mounts and root changes",
     EPERM,
     {"mount", "umount2", "pivot_root", "chroot", "fsopen", "fsconfig", "fsmount", "fspick",
      "move_mount", "open_tree", "mount_setattr"}},
    {"namespaces", EPERM, {"setns", "unshare"}},
    {"other processes' memory and files",
     EPERM,
     {"ptrace", "process_vm_readv", "process_vm_writev", "process_madvise", "pidfd_getfd", "kcmp"}},
    {"kernel attack surface",
     EPERM,
     {"bpf", "perf_event_open", "userfaultfd", "io_uring_setup", "io_uring_enter",
      "io_uring_register", "fanotify_init", "lookup_dcookie"}},
    {"kernel keyrings", EPERM, {"keyctl", "add_key", "request_key"}},
    {"kernel modules and kexec",
     EPERM,
     {"init_module", "finit_module", "delete_module", "create_module", "get_kernel_syms",
      "query_module", "kexec_load", "kexec_file_load"}},
    {"file handles, which bypass path lookup", EPERM, {"open_by_handle_at", "name_to_handle_at"}},
    {"host administration",
     EPERM,
     {"acct", "swapon", "swapoff", "reboot", "quotactl", "quotactl_fd", "syslog", "vhangup",
      "sethostname", "setdomainname", "nfsservctl", "uselib", "_sysctl"}},
    {"hardware ports", EPERM, {"iopl", "ioperm"}},
    {"the system clock", EPERM, {"settimeofday", "clock_settime", "clock_adjtime", "adjtimex"}},
    {"NUMA memory placement",
     EPERM,
     {"mbind", "set_mempolicy", "set_mempolicy_home_node", "migrate_pages", "move_pages"}},
    {"so that libc falls back to clone, whose flags are checked", ENOSYS, {"clone3"}},
};

struct NamedValue {
  std::uint32_t value;
  const char* name;
};

// For clone (not clone3) the low byte is the exit signal, where 0x80 (CLONE_NEWTIME) is never
// a valid signal: refusing it only turns the kernel's EINVAL into EPERM.
constexpr NamedValue kNamespaceCloneFlags[] = {
    {CLONE_NEWNS, "CLONE_NEWNS"},         {CLONE_NEWUTS, "CLONE_NEWUTS"},
    {CLONE_NEWIPC, "CLONE_NEWIPC"},       {CLONE_NEWUSER, "CLONE_NEWUSER"},
    {CLONE_NEWPID, "CLONE_NEWPID"},       {CLONE_NEWNET, "CLONE_NEWNET"},
    {CLONE_NEWCGROUP, "CLONE_NEWCGROUP"}, {CLONE_NEWTIME, "CLONE_NEWTIME"},
};

// A seccomp listener lets a process answer another's system calls in its place: a desk could
// then build a supervisor the filter never meant to allow. Sandbox2 refuses it too.
constexpr NamedValue kRefusedSeccompFlags[] = {
    {1U << 3, "SECCOMP_FILTER_FLAG_NEW_LISTENER"},
};

// A syscall allowed unless one argument holds any of some flags.
struct FlagRule {
  const char* syscall;
  unsigned argument;
  const char* argument_name;
  std::span<const NamedValue> flags;
};

const FlagRule kFlagRules[] = {
    {"clone", 0, "flags", kNamespaceCloneFlags},
    {"seccomp", 1, "flags", kRefusedSeccompFlags},
};

// TIOCSTI pushes characters into a terminal's input (a command typed into the user's shell
// when the sandbox shares a terminal); TIOCLINUX reads and writes the console.
constexpr NamedValue kRefusedIoctls[] = {{TIOCSTI, "TIOCSTI"}, {TIOCLINUX, "TIOCLINUX"}};

// Docker's harmless personas; notably not ADDR_NO_RANDOMIZE, which would switch off ASLR for
// the programs the sandbox executes next.
constexpr NamedValue kAllowedPersonalities[] = {
    {0x0, "PER_LINUX"},
    {0x8, "PER_LINUX32"},
    {0x20000, "UNAME26"},
    {0x20008, "UNAME26|PER_LINUX32"},
    {0xffffffff, "query the persona"},
};

// vsock is not network-namespaced: inside a virtual machine it reaches the hypervisor host
// even when the sandbox has no network. Docker refuses it too.
// AF_UNIX: a host socket whose file is in the desk's view (under /etc, say) could be
// connected to whatever the mounts say, since a read-only mount does not stop connect(), and
// landlock cannot yet restrict it; seccomp cannot read the address, so the family goes.
constexpr NamedValue kRefusedSocketFamilies[] = {{AF_UNIX, "AF_UNIX"}, {AF_VSOCK, "AF_VSOCK"}};

// socketpair(2) stays for pipes between processes, but only connected kinds: a datagram
// socket of a pair can still be connect()ed again or sendto() any pathname datagram socket
// whose file is in view (a host socket shown by read_only_paths or host_view = "full"),
// which is the road socket(AF_UNIX) was closed to keep shut. A stream or seqpacket pair is
// connected for life (EISCONN). The kernel ignores SOCK_CLOEXEC and SOCK_NONBLOCK when it
// picks the kind, so the filter does too.
constexpr NamedValue kAllowedSocketpairTypes[] = {{SOCK_STREAM, "SOCK_STREAM"},
                                                  {SOCK_SEQPACKET, "SOCK_SEQPACKET"}};
constexpr std::uint32_t kSocketTypeFlags = SOCK_CLOEXEC | SOCK_NONBLOCK;

// A syscall decided by one 32-bit argument: the listed values get one answer, all others the
// other. The kernel reads these arguments as 32-bit ints (ioctl's request, personality,
// socket's family), so the match is on the low 32 bits: 0x100005412 is TIOCSTI too.
struct ValueRule {
  const char* syscall;
  unsigned argument;
  const char* argument_name;
  std::span<const NamedValue> values;
  bool listed_values_allowed;  // false: the listed values fail with EPERM, others are allowed
  // Bits of the argument that are not compared (flags the kernel strips before it looks).
  std::uint32_t ignored_bits = 0;
  const char* ignored_bits_name = nullptr;
};

const ValueRule kValueRules[] = {
    {"ioctl", 1, "request", kRefusedIoctls, false},
    {"personality", 0, "persona", kAllowedPersonalities, true},
    {"socket", 0, "family", kRefusedSocketFamilies, false},
    {"socketpair", 1, "type", kAllowedSocketpairTypes, true, kSocketTypeFlags,
     "SOCK_CLOEXEC and SOCK_NONBLOCK"},
};

// ---------------------------------------------------------------------------------------

// Unknown calls fail as they would on an older kernel, so programs fall back to older calls.
constexpr std::uint32_t kDefaultAction = SCMP_ACT_ERRNO(ENOSYS);

// The native syscall number of `name`, or nullopt when this libseccomp does not know it
// (__NR_SCMP_ERROR) or knows it only as a pseudo-number because x86_64 lacks it (< 0).
std::optional<int> resolve(const char* name) {
  const int number = seccomp_syscall_resolve_name(name);
  if (number < 0) return std::nullopt;
  return number;
}

struct ContextDeleter {
  void operator()(void* context) const { seccomp_release(context); }
};
using Context = std::unique_ptr<void, ContextDeleter>;

Result<void> add_rule(const Context& context, std::uint32_t action, int syscall_number,
                      std::span<const scmp_arg_cmp> comparisons, const std::string& rule) {
  // _exact: the rule must mean exactly what it says, never a rewritten approximation.
  const int rc =
      seccomp_rule_add_exact_array(context.get(), action, syscall_number,
                                   static_cast<unsigned>(comparisons.size()), comparisons.data());
  if (rc != 0) {
    return Error::from_errno(-rc, "libseccomp could not add the seccomp rule \"" + rule + "\"");
  }
  return success();
}

// The complement of `values` within the 32-bit numbers, as disjoint (mask, prefix) pairs:
// every shortest prefix that no listed value starts with. At most 32 per listed value.
// "Prefix" counts only the `compared_bits`, from the highest down: the others are never
// looked at, so a masked value and every value differing from it in those bits alike.
//
// Why not "allow ioctl, but EPERM for TIOCSTI": libseccomp silently drops a conditional rule
// when the same syscall has an unconditional one (whatever the actions), and orders
// overlapping conditional rules its own way. Disjoint rules mean the same in any order.
void collect_complement(std::uint32_t prefix, std::uint32_t decided_bits, int next_bit,
                        std::uint32_t compared_bits, std::span<const NamedValue> values,
                        std::vector<std::pair<std::uint32_t, std::uint32_t>>& out) {
  const bool some_value_starts_here =
      std::any_of(values.begin(), values.end(),
                  [&](const NamedValue& v) { return (v.value & decided_bits) == prefix; });
  if (!some_value_starts_here) {
    out.emplace_back(decided_bits, prefix);
    return;
  }
  while (next_bit >= 0 && (compared_bits & (std::uint32_t{1} << next_bit)) == 0) --next_bit;
  if (next_bit < 0) return;  // `prefix` is itself a listed value
  const std::uint32_t bit = std::uint32_t{1} << next_bit;
  collect_complement(prefix, decided_bits | bit, next_bit - 1, compared_bits, values, out);
  collect_complement(prefix | bit, decided_bits | bit, next_bit - 1, compared_bits, values, out);
}

scmp_arg_cmp low_32_bits_equal(unsigned argument, std::uint32_t mask, std::uint32_t value) {
  return scmp_arg_cmp{argument, SCMP_CMP_MASKED_EQ, mask, value};
}

Result<void> add_value_rule(const Context& context, const ValueRule& rule, int syscall_number) {
  const std::uint32_t listed_action =
      rule.listed_values_allowed ? SCMP_ACT_ALLOW : SCMP_ACT_ERRNO(EPERM);
  const std::uint32_t other_action =
      rule.listed_values_allowed ? SCMP_ACT_ERRNO(EPERM) : SCMP_ACT_ALLOW;
  const std::uint32_t compared_bits = ~rule.ignored_bits;
  for (const NamedValue& value : rule.values) {
    const scmp_arg_cmp comparison =
        low_32_bits_equal(rule.argument, compared_bits, value.value & compared_bits);
    DESKD_RETURN_IF_ERROR(add_rule(context, listed_action, syscall_number, {&comparison, 1},
                                   std::string(rule.syscall) + " " + value.name));
  }
  std::vector<std::pair<std::uint32_t, std::uint32_t>> complement;
  collect_complement(0, 0, 31, compared_bits, rule.values, complement);
  for (const auto& [mask, prefix] : complement) {
    const scmp_arg_cmp comparison = low_32_bits_equal(rule.argument, mask, prefix);
    DESKD_RETURN_IF_ERROR(
        add_rule(context, other_action, syscall_number, {&comparison, 1},
                 std::string(rule.syscall) + " with any other " + rule.argument_name));
  }
  return success();
}

Result<void> add_flag_rule(const Context& context, const FlagRule& rule) {
  const std::optional<int> number = resolve(rule.syscall);
  if (!number) return success();
  std::uint32_t all_flags = 0;
  for (const NamedValue& flag : rule.flags) {
    all_flags |= flag.value;
    // The kernel reads these flags words as 32 bits (for x86_64 clone, arg0 is the flags).
    const scmp_arg_cmp comparison = low_32_bits_equal(rule.argument, flag.value, flag.value);
    DESKD_RETURN_IF_ERROR(add_rule(context, SCMP_ACT_ERRNO(EPERM), *number, {&comparison, 1},
                                   std::string(rule.syscall) + " with " + flag.name));
  }
  const scmp_arg_cmp none = low_32_bits_equal(rule.argument, all_flags, 0);
  return add_rule(context, SCMP_ACT_ALLOW, *number, {&none, 1}, std::string(rule.syscall) + " without those flags");
}

Result<Context> compile_rules() {
  if (seccomp_arch_native() != SCMP_ARCH_X86_64) {
    return Error::make(ErrorCode::unsupported,
                       "deskd's seccomp profile is written for x86_64 and this host is not "
                       "x86_64.");
  }
  Context context(seccomp_init(kDefaultAction));
  if (!context) {
    return Error::make(ErrorCode::system, "libseccomp could not create a seccomp filter.");
  }
  // The filter holds only the native architecture. libseccomp's x86_64 filter also sends
  // x32 syscall numbers (nr | 0x40000000) to this action; the tests check that it does.
  if (const int rc =
          seccomp_attr_set(context.get(), SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS);
      rc != 0) {
    return Error::from_errno(-rc, "libseccomp could not set the bad-architecture action");
  }
  // A binary search over syscall numbers instead of a linear chain: argument-checked calls
  // (ioctl, clone) would otherwise walk past every allowed call first.
  if (const int rc = seccomp_attr_set(context.get(), SCMP_FLTATR_CTL_OPTIMIZE, 2); rc != 0) {
    return Error::from_errno(-rc, "libseccomp could not set the binary-tree optimization");
  }
  for (const char* name : kAllowedSyscalls) {
    if (const std::optional<int> number = resolve(name)) {
      DESKD_RETURN_IF_ERROR(add_rule(context, SCMP_ACT_ALLOW, *number, {}, name));
    }
  }
  for (const RefusedGroup& group : kRefusedGroups) {
    const std::uint32_t action = SCMP_ACT_ERRNO(static_cast<std::uint16_t>(group.error_number));
    // libseccomp refuses (EACCES) a rule that repeats the default action; the default
    // already gives these calls their answer.
    if (action == kDefaultAction) continue;
    for (const char* name : group.syscalls) {
      if (const std::optional<int> number = resolve(name)) {
        DESKD_RETURN_IF_ERROR(add_rule(context, action, *number, {}, name));
      }
    }
  }
  for (const FlagRule& rule : kFlagRules) DESKD_RETURN_IF_ERROR(add_flag_rule(context, rule));
  for (const ValueRule& rule : kValueRules) {
    if (const std::optional<int> number = resolve(rule.syscall)) {
      DESKD_RETURN_IF_ERROR(add_value_rule(context, rule, *number));
    }
  }
  return context;
}

// seccomp_export_bpf writes the raw instructions to a file descriptor (libseccomp 2.5 has no
// in-memory export); a memfd keeps them off the file system.
Result<std::vector<sock_filter>> export_instructions(const Context& context) {
  UniqueFd memory(memfd_create("deskd-seccomp", MFD_CLOEXEC));
  if (!memory) return Error::from_errno(errno, "memfd_create for the seccomp program failed");
  if (const int rc = seccomp_export_bpf(context.get(), memory.get()); rc != 0) {
    return Error::from_errno(-rc, "libseccomp could not export the seccomp program");
  }
  const off_t size = lseek(memory.get(), 0, SEEK_END);
  if (size < 0) return Error::from_errno(errno, "lseek on the seccomp program failed");
  if (size == 0 || size % sizeof(sock_filter) != 0 ||
      static_cast<std::size_t>(size) / sizeof(sock_filter) > BPF_MAXINSNS) {
    return Error::make(ErrorCode::internal, "libseccomp exported a seccomp program of " +
                                                std::to_string(size) +
                                                " bytes, which is not a loadable BPF program.");
  }
  std::vector<sock_filter> instructions(static_cast<std::size_t>(size) / sizeof(sock_filter));
  auto* bytes = reinterpret_cast<char*>(instructions.data());
  std::size_t done = 0;
  while (done < static_cast<std::size_t>(size)) {
    const ssize_t got = retry_on_eintr([&] {
      return pread(memory.get(), bytes + done, static_cast<std::size_t>(size) - done,
                   static_cast<off_t>(done));
    });
    if (got < 0) return Error::from_errno(errno, "reading back the seccomp program failed");
    if (got == 0) break;
    done += static_cast<std::size_t>(got);
  }
  if (done != static_cast<std::size_t>(size)) {
    return Error::make(ErrorCode::internal, "the exported seccomp program was cut short.");
  }
  return instructions;
}

// Appends `words` after `indent`, wrapped before column 88.
void append_wrapped(std::string& text, const std::vector<std::string>& words,
                    std::string_view indent) {
  constexpr std::size_t kWidth = 88;
  std::size_t column = 0;
  for (const std::string& word : words) {
    if (column > 0 && column + 1 + word.size() > kWidth) {
      text += '\n';
      column = 0;
    }
    if (column == 0) {
      text += indent;
      column = indent.size();
    } else {
      text += ' ';
      ++column;
    }
    text += word;
    column += word.size();
  }
  if (column > 0) text += '\n';
}

std::vector<std::string> known_names(std::span<const char* const> names) {
  std::vector<std::string> known;
  for (const char* name : names) {
    if (resolve(name)) known.emplace_back(name);
  }
  std::sort(known.begin(), known.end());
  return known;
}

std::string hex(std::uint32_t value) {
  char buffer[16];
  std::snprintf(buffer, sizeof buffer, "0x%x", value);
  return buffer;
}

}  // namespace

Result<SeccompProgram> SeccompProgram::build() {
  DESKD_ASSIGN_OR_RETURN(const Context context, compile_rules());
  DESKD_ASSIGN_OR_RETURN(std::vector<sock_filter> instructions, export_instructions(context));
  SeccompProgram program;
  program.instructions_ = std::move(instructions);
  program.program_.len = static_cast<unsigned short>(program.instructions_.size());
  program.program_.filter = program.instructions_.data();
  return program;
}

std::string describe_seccomp_profile() {
  std::string text;
  text += "deskd seccomp profile (x86_64)\n";
  text += "  A system call not listed here fails with ENOSYS, as on an older kernel, so\n";
  text += "  programs fall back to older calls.\n";
  text += "  A denied system call fails with EPERM.\n";
  text += "  A call from another architecture (i386 through int 0x80) or from the x32 ABI kills\n";
  text += "  the process.\n";

  const std::vector<std::string> allowed = known_names(kAllowedSyscalls);
  text += "\nAllowed (" + std::to_string(allowed.size()) + "):\n";
  append_wrapped(text, allowed, "  ");

  for (const int error_number : {EPERM, ENOSYS}) {
    text += std::string("\nDenied with ") + strerrorname_np(error_number) + ":\n";
    for (const RefusedGroup& group : kRefusedGroups) {
      if (group.error_number != error_number) continue;
      const std::vector<std::string> names =
          known_names({group.syscalls.begin(), group.syscalls.size()});
      if (names.empty()) continue;
      text += "  " + std::string(group.reason) + ":\n";
      append_wrapped(text, names, "    ");
    }
  }

  text += "\nDecided by argument:\n";
  for (const FlagRule& rule : kFlagRules) {
    std::vector<std::string> flag_names;
    for (const NamedValue& flag : rule.flags) flag_names.emplace_back(flag.name);
    text += std::string("  ") + rule.syscall + ": allowed, but EPERM when the " + rule.argument_name +
            " hold any of\n";
    append_wrapped(text, flag_names, "    ");
  }
  for (const ValueRule& rule : kValueRules) {
    std::vector<std::string> values;
    for (const NamedValue& value : rule.values) {
      values.push_back(std::string(value.name) + " (" + hex(value.value) + ")");
    }
    text += std::string("  ") + rule.syscall + ": " +
            (rule.listed_values_allowed ? "allowed if the " : "EPERM if the ") +
            rule.argument_name + "'s low 32 bits are one of these, otherwise " +
            (rule.listed_values_allowed ? "EPERM" : "allowed") + "\n";
    if (rule.ignored_bits_name != nullptr) {
      text += std::string("    (") + rule.ignored_bits_name + " are not compared)\n";
    }
    append_wrapped(text, values, "    ");
  }
  return text;
}

}  // namespace deskd::sandbox
