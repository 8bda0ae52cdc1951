#include "sandbox/seccomp_notification.h"

#include <fcntl.h>
#include <linux/seccomp.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>

#include "base/unique_fd.h"

namespace deskd::sandbox {
namespace {

// The calls the desk's filter refuses with EPERM (seccomp_profile.cpp's refused groups and
// its argument rules), by number: their names and the rule each breaks, in words for the
// model and the person. A refused call missing here is still answered with EPERM and named
// by its number. `arguments`: how many of its arguments the summary shows.
struct RefusedCall {
  long number;
  const char* name;
  int arguments;
  const char* rule;
};

constexpr const char* kMounts = "desks may not mount file systems";
constexpr const char* kNamespaces = "desks may not make or enter namespaces";
constexpr const char* kOtherProcesses = "desks may not reach other processes' memory or files";
constexpr const char* kAttackSurface = "desks may not use this kernel interface, a large attack surface";
constexpr const char* kKeyrings = "desks may not use the kernel's keyrings";
constexpr const char* kModules = "desks may not load kernel modules or start another kernel";
constexpr const char* kHandles = "desks may not open files by handle, which bypasses path checks";
constexpr const char* kHost = "desks may not administer the host";
constexpr const char* kPorts = "desks may not reach hardware ports";
constexpr const char* kClock = "desks may not set the system clock";
constexpr const char* kNuma = "desks may not place memory on NUMA nodes";

#define DESKD_REFUSED(name, arguments, rule) {SYS_##name, #name, arguments, rule},
constexpr RefusedCall kRefusedCalls[] = {
    // clang-format off
    DESKD_REFUSED(mount, 5, kMounts) DESKD_REFUSED(umount2, 2, kMounts) DESKD_REFUSED(pivot_root, 2, kMounts)
    DESKD_REFUSED(chroot, 1, kMounts) DESKD_REFUSED(fsopen, 2, kMounts) DESKD_REFUSED(fsconfig, 5, kMounts)
    DESKD_REFUSED(fsmount, 3, kMounts) DESKD_REFUSED(fspick, 3, kMounts) DESKD_REFUSED(move_mount, 5, kMounts)
    DESKD_REFUSED(open_tree, 3, kMounts) DESKD_REFUSED(mount_setattr, 5, kMounts)
    DESKD_REFUSED(setns, 2, kNamespaces) DESKD_REFUSED(unshare, 1, kNamespaces)
    {SYS_clone, "clone", 1, "desks may not make namespaces"},
    DESKD_REFUSED(ptrace, 4, kOtherProcesses) DESKD_REFUSED(process_vm_readv, 6, kOtherProcesses)
    DESKD_REFUSED(process_vm_writev, 6, kOtherProcesses) DESKD_REFUSED(process_madvise, 5, kOtherProcesses)
    DESKD_REFUSED(pidfd_getfd, 3, kOtherProcesses) DESKD_REFUSED(kcmp, 5, kOtherProcesses)
    DESKD_REFUSED(bpf, 3, kAttackSurface) DESKD_REFUSED(perf_event_open, 5, kAttackSurface)
    DESKD_REFUSED(userfaultfd, 1, kAttackSurface) DESKD_REFUSED(io_uring_setup, 2, kAttackSurface)
    DESKD_REFUSED(io_uring_enter, 6, kAttackSurface) DESKD_REFUSED(io_uring_register, 4, kAttackSurface)
    DESKD_REFUSED(fanotify_init, 2, kAttackSurface) DESKD_REFUSED(lookup_dcookie, 3, kAttackSurface)
    DESKD_REFUSED(keyctl, 5, kKeyrings) DESKD_REFUSED(add_key, 5, kKeyrings) DESKD_REFUSED(request_key, 4, kKeyrings)
    DESKD_REFUSED(init_module, 3, kModules) DESKD_REFUSED(finit_module, 3, kModules)
    DESKD_REFUSED(delete_module, 2, kModules) DESKD_REFUSED(create_module, 2, kModules)
    DESKD_REFUSED(get_kernel_syms, 1, kModules) DESKD_REFUSED(query_module, 5, kModules)
    DESKD_REFUSED(kexec_load, 4, kModules) DESKD_REFUSED(kexec_file_load, 5, kModules)
    DESKD_REFUSED(open_by_handle_at, 3, kHandles) DESKD_REFUSED(name_to_handle_at, 5, kHandles)
    DESKD_REFUSED(acct, 1, kHost) DESKD_REFUSED(swapon, 2, kHost) DESKD_REFUSED(swapoff, 1, kHost)
    DESKD_REFUSED(reboot, 4, kHost) DESKD_REFUSED(quotactl, 4, kHost) DESKD_REFUSED(quotactl_fd, 4, kHost)
    DESKD_REFUSED(syslog, 3, kHost) DESKD_REFUSED(vhangup, 0, kHost) DESKD_REFUSED(sethostname, 2, kHost)
    DESKD_REFUSED(setdomainname, 2, kHost) DESKD_REFUSED(nfsservctl, 3, kHost) DESKD_REFUSED(uselib, 1, kHost)
    DESKD_REFUSED(_sysctl, 1, kHost)
    DESKD_REFUSED(iopl, 1, kPorts) DESKD_REFUSED(ioperm, 3, kPorts)
    DESKD_REFUSED(settimeofday, 2, kClock) DESKD_REFUSED(clock_settime, 2, kClock)
    DESKD_REFUSED(clock_adjtime, 2, kClock) DESKD_REFUSED(adjtimex, 1, kClock)
    DESKD_REFUSED(mbind, 6, kNuma) DESKD_REFUSED(set_mempolicy, 3, kNuma)
    DESKD_REFUSED(set_mempolicy_home_node, 4, kNuma) DESKD_REFUSED(migrate_pages, 4, kNuma)
    DESKD_REFUSED(move_pages, 6, kNuma)
    {SYS_seccomp, "seccomp", 2, "desks may not make a seccomp listener, which would answer others' system calls"},
    {SYS_ioctl, "ioctl", 2, "desks may not push input into a terminal or drive the console (TIOCSTI, TIOCLINUX)"},
    {SYS_personality, "personality", 1, "desks may not switch off address randomisation or change persona"},
    {SYS_socket, "socket", 3, "desks may not open Unix or vsock sockets"},
    {SYS_socketpair, "socketpair", 3, "desks may make only stream or seqpacket socket pairs"},
    // clang-format on
};
#undef DESKD_REFUSED

const RefusedCall* find_refused_call(int number) {
  for (const RefusedCall& call : kRefusedCalls) {
    if (call.number == number) return &call;
  }
  return nullptr;
}

// Reads at most `capacity` - 1 bytes of a /proc file, best effort; "" when it cannot.
std::string read_small_file(const char* path, std::size_t capacity) {
  char buffer[256];
  if (capacity > sizeof buffer) capacity = sizeof buffer;
  UniqueFd file(::open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
  if (!file) return {};
  const ssize_t got = retry_on_eintr([&] { return ::read(file.get(), buffer, capacity - 1); });
  if (got <= 0) return {};
  return std::string(buffer, static_cast<std::size_t>(got));
}

}  // namespace

bool seccomp_user_notification_available() {
  // SECCOMP_GET_ACTION_AVAIL (Linux 4.14) answers 0 for an action this kernel knows;
  // SECCOMP_RET_USER_NOTIF came with Linux 5.0, with the listener flag.
  std::uint32_t action = SECCOMP_RET_USER_NOTIF;
  return ::syscall(SYS_seccomp, SECCOMP_GET_ACTION_AVAIL, 0, &action) == 0;
}

bool deskd_under_seccomp_filter() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("Seccomp:", 0) == 0) return line.find('2') != std::string::npos;
  }
  return false;
}

// Raw ioctls, not libseccomp's seccomp_notify_receive/respond: those allocate a
// notification per call (seccomp_notify_alloc) and load libseccomp into the lean deskd,
// while these are two fixed-size structures on the stack — a few microseconds per answer.
Result<std::optional<SeccompNotice>> receive_seccomp_notice(int listener) {
  seccomp_notif notification;
  std::memset(&notification, 0, sizeof notification);  // the kernel refuses a dirty buffer
  if (::ioctl(listener, SECCOMP_IOCTL_NOTIF_RECV, &notification) != 0) {
    if (errno == ENOENT || errno == EINTR || errno == EAGAIN) return std::optional<SeccompNotice>();
    return Error::from_errno(errno, "Reading the desk's seccomp listener failed");
  }
  SeccompNotice notice;
  notice.id = notification.id;
  notice.pid = static_cast<pid_t>(notification.pid);
  notice.syscall_number = notification.data.nr;
  notice.architecture = notification.data.arch;
  for (std::size_t index = 0; index < notice.arguments.size(); ++index) {
    notice.arguments[index] = notification.data.args[index];
  }
  return std::optional<SeccompNotice>(notice);
}

Result<void> refuse_seccomp_notice(int listener, const SeccompNotice& notice, int error_number) {
  seccomp_notif_resp response;
  std::memset(&response, 0, sizeof response);
  response.id = notice.id;
  response.error = -error_number;  // the caller's return value is -1 with this errno
  response.val = 0;
  response.flags = 0;  // never SECCOMP_USER_NOTIF_FLAG_CONTINUE: the call stays refused
  if (::ioctl(listener, SECCOMP_IOCTL_NOTIF_SEND, &response) != 0 && errno != ENOENT) {
    return Error::from_errno(errno, "Answering the desk's seccomp listener failed");
  }
  return success();
}

void prefer_synchronous_wake_up(int listener) {
  // Not in every uapi header yet: linux/seccomp.h of Linux 6.6.
  constexpr unsigned long kSetFlags = _IOW('!', 4, std::uint64_t);  // SECCOMP_IOCTL_NOTIF_SET_FLAGS
  constexpr unsigned long kSynchronousWakeUp = 1;                   // SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP
  (void)::ioctl(listener, kSetFlags, kSynchronousWakeUp);
}

bool seccomp_notice_still_waiting(int listener, const SeccompNotice& notice) {
  std::uint64_t id = notice.id;
  return ::ioctl(listener, SECCOMP_IOCTL_NOTIF_ID_VALID, &id) == 0;
}

int refused_syscall_error(const SeccompNotice&) { return EPERM; }

Refusal describe_seccomp_notice(const SeccompNotice& notice) {
  Refusal refusal;
  refusal.enforcer = Enforcer::seccomp;
  const RefusedCall* call = find_refused_call(notice.syscall_number);
  refusal.what =
      call != nullptr ? std::string(call->name) + "(2)" : "system call " + std::to_string(notice.syscall_number);
  refusal.rule = call != nullptr ? call->rule : "desks may not make this system call";
  if (notice.syscall_number == SYS_socket) {
    // glibc asks nscd (and syslog(3) its socket) on its own: a probe, not the program's wish.
    const auto family = static_cast<std::uint32_t>(notice.arguments[0]);
    refusal.what += family == AF_UNIX ? " AF_UNIX" : family == AF_VSOCK ? " AF_VSOCK" : "";
    refusal.probe = family == AF_UNIX;
    refusal.shown_to_model = family != AF_UNIX;
  }
  // Libraries try io_uring and fall back when it is refused (liburing users, tokio, libuv).
  if (notice.syscall_number == SYS_io_uring_setup) refusal.probe = true;
  const int shown = call != nullptr ? call->arguments : 6;
  std::string details;
  for (int index = 0; index < shown; ++index) {
    char number[24];
    std::snprintf(number, sizeof number, "0x%" PRIx64, notice.arguments[static_cast<std::size_t>(index)]);
    details += (index == 0 ? "arguments " : ", ");
    details += number;
  }
  refusal.details = std::move(details);
  return refusal;
}

RefusedProcess describe_refused_process(pid_t host_pid) {
  RefusedProcess process;
  const std::string folder = "/proc/" + std::to_string(host_pid);
  process.comm = read_small_file((folder + "/comm").c_str(), 32);
  if (!process.comm.empty() && process.comm.back() == '\n') process.comm.pop_back();
  char target[512];
  const ssize_t length = ::readlink((folder + "/exe").c_str(), target, sizeof target - 1);
  if (length > 0) process.exe.assign(target, static_cast<std::size_t>(length));
  // NSpid's last number is the pid in the innermost namespace: the desk's.
  UniqueFd file(::open((folder + "/status").c_str(), O_RDONLY | O_CLOEXEC));
  if (file) {
    char buffer[2048];
    const ssize_t got = retry_on_eintr([&] { return ::read(file.get(), buffer, sizeof buffer - 1); });
    if (got > 0) {
      buffer[got] = '\0';
      if (const char* line = std::strstr(buffer, "\nNSpid:"); line != nullptr) {
        const char* end = std::strchr(line + 1, '\n');
        const char* last = nullptr;
        for (const char* cursor = line + 7; cursor < (end != nullptr ? end : buffer + got); ++cursor) {
          if (*cursor == '\t' || *cursor == ' ') last = cursor + 1;
        }
        if (last != nullptr) process.pid_in_desk = static_cast<pid_t>(std::atoi(last));
      }
    }
  }
  return process;
}

}  // namespace deskd::sandbox
