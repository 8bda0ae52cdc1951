#include "sandbox/child_process.h"

#include <fcntl.h>
#include <linux/close_range.h>
#include <linux/seccomp.h>
#include <net/if.h>
#include <poll.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdint>

#include "sandbox/child_failure.h"

namespace deskd::sandbox {
namespace {

int bring_up_loopback() {
  const int fd = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  ifreq request{};
  copy_text(request.ifr_name, sizeof request.ifr_name, "lo");
  int result = ::ioctl(fd, SIOCGIFFLAGS, &request);
  if (result == 0) {
    request.ifr_flags = static_cast<short>(request.ifr_flags | IFF_UP | IFF_RUNNING);
    result = ::ioctl(fd, SIOCSIFFLAGS, &request);
  }
  const int saved = errno;
  ::close(fd);
  errno = saved;
  return result;
}

// Lets the sandbox's forwarder, which holds no capability, bind the allowed names' ports in
// the sandbox's own network namespace (the setting is per namespace; only `lo` is there).
int set_unprivileged_port_start(int port) {
  char text[16];
  std::size_t length = 0;
  char digits[8];
  std::size_t count = 0;
  do {
    digits[count++] = static_cast<char>('0' + port % 10);
    port /= 10;
  } while (port > 0 && count < sizeof digits);
  while (count > 0) text[length++] = digits[--count];
  text[length++] = '\n';
  const int fd = ::open("/proc/sys/net/ipv4/ip_unprivileged_port_start", O_WRONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  const ssize_t written = ::write(fd, text, length);
  const int saved = errno;
  ::close(fd);
  errno = saved;
  return written == static_cast<ssize_t>(length) ? 0 : -1;
}

// Installs context.descriptors as 0, 1, 2, 3, ..., then deskd-init's spec, the failure
// pipe and deskd-init's image right after them, and closes every other descriptor, so
// nothing of the daemon (sockets, journals, other desks' pipes) is reachable from the
// sandbox. Returns where the failure pipe is now.
struct InstalledDescriptors {
  int spec = -1;
  int failure = -1;
  int image = -1;
};

InstalledDescriptors install_descriptors(const ChildContext& context, int failure_fd) {
  const int commands = static_cast<int>(context.descriptors.size());
  const int total = commands + 3;
  int sources[64 + 3];
  if (commands > 64) fail_child(failure_fd, EMFILE, "install the descriptors", "");
  // Anything that dup2 is about to overwrite is first moved above the targets.
  int failure = ::fcntl(failure_fd, F_DUPFD_CLOEXEC, total);
  if (failure < 0) fail_child(failure_fd, errno, "move the failure pipe aside", "");
  for (int index = 0; index < total; ++index) {
    int source = index < commands ? context.descriptors[static_cast<std::size_t>(index)]
                 : index == commands     ? context.init_spec_fd
                 : index == commands + 1 ? failure
                                         : context.init_image_fd;
    if (source >= 0 && source < total) {
      source = ::fcntl(source, F_DUPFD_CLOEXEC, total);
      if (source < 0) fail_child(failure, errno, "move a descriptor aside", "");
    }
    sources[index] = source;
  }
  for (int index = 0; index < total; ++index) {
    if (sources[index] < 0) continue;  // only 0-2 may be kept as they are
    if (::dup2(sources[index], index) < 0) fail_child(failure, errno, "install the descriptors", "");
  }
  failure = commands + 1;
  if (::syscall(SYS_close_range, static_cast<unsigned>(total), UINT_MAX, 0U) != 0) {
    fail_child(failure, errno, "close the inherited descriptors", "");
  }
  // The spec and the failure pipe cross into deskd-init; its image needs no descriptor there.
  if (::fcntl(commands + 2, F_SETFD, FD_CLOEXEC) != 0) fail_child(failure, errno, "mark deskd-init's image", "");
  return {commands, failure, commands + 2};
}

// Writes a small non-negative number as decimal text; async-signal-safe.
void decimal(int value, char (&text)[12]) {
  char reversed[12];
  int length = 0;
  do {
    reversed[length++] = static_cast<char>('0' + value % 10);
    value /= 10;
  } while (value > 0 && length < 11);
  for (int index = 0; index < length; ++index) text[index] = reversed[length - 1 - index];
  text[length] = '\0';
}

// The kernel clears the parent-death signal whenever the credentials change, as the id
// switch does under a root daemon; so it is set again. A parent that died in between has
// closed its end of the failure pipe, which poll reports as POLLERR on ours.
void die_with_parent_again(int failure_fd) {
  if (::prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) != 0) {
    fail_child(failure_fd, errno, "ask to die with the parent", "");
  }
  pollfd descriptor{failure_fd, POLLOUT, 0};
  if (::poll(&descriptor, 1, 0) < 0 || (descriptor.revents & (POLLERR | POLLHUP)) != 0) ::_exit(125);
}

}  // namespace

void run_sandbox_child(const ChildContext& context) {
  int failure_fd = context.failure_fd;
  const char* failed_step = "";
  // No core file before the limits are set, first: one would hold deskd's memory (which this
  // child may share) and land in the folder it runs in.
  const rlimit no_core{0, 0};
  if (::setrlimit(RLIMIT_CORE, &no_core) != 0) fail_child(failure_fd, errno, "set a resource limit", "");
  // Die with the parent; the sync pipe below covers a parent that died before this line.
  if (::prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) != 0) {
    fail_child(failure_fd, errno, "ask to die with the parent", "");
  }
  char go = 0;
  ssize_t got = 0;
  do {
    got = ::read(context.sync_fd, &go, 1);
  } while (got < 0 && errno == EINTR);
  if (got != 1) ::_exit(125);  // the parent is gone or failed to write the id maps
  ::close(context.sync_fd);
  // Before anything else: every process the sandbox makes is counted in its cgroup.
  for (const ChildContext::CgroupJoin& join : context.cgroup_joins) {
    if (::write(join.fd, "0", 1) != 1) fail_child(failure_fd, errno, "join its cgroup", join.path);
    ::close(join.fd);
  }

  if (become_sandbox_identity(context.identity, &failed_step) != 0) {
    fail_child(failure_fd, errno, failed_step, "");
  }
  die_with_parent_again(failure_fd);
  // Before the mount plan, which makes /proc/sys read-only as container runtimes do. The
  // setting is the sandbox's own network namespace's whichever /proc is used to write it.
  if (context.unprivileged_port_start >= 0 && set_unprivileged_port_start(context.unprivileged_port_start) != 0) {
    fail_child(failure_fd, errno, "let the egress forwarder bind the allowed names' ports",
               "/proc/sys/net/ipv4/ip_unprivileged_port_start");
  }
  run_mount_plan(*context.mount_steps, failure_fd);
  if (context.hostname != nullptr) {
    for (std::size_t length = 0;; ++length) {
      if (context.hostname[length] != '\0') continue;
      if (::sethostname(context.hostname, length) != 0) fail_child(failure_fd, errno, "set the hostname", "");
      break;
    }
  }
  if (context.bring_up_loopback && bring_up_loopback() != 0) {
    fail_child(failure_fd, errno, "bring up the loopback interface", "lo");
  }
  if (::setsid() < 0) fail_child(failure_fd, errno, "start a new session", "");
  // The descriptors move before the limits apply: moving one aside takes a number above all
  // of deskd's descriptors, which a busy deskd (hundreds of desks, a thousand clients) holds
  // past the desk's RLIMIT_NOFILE. Once installed, the sandbox holds only a few low numbers.
  const InstalledDescriptors installed = install_descriptors(context, failure_fd);
  failure_fd = installed.failure;
  for (const ResourceLimit& limit : context.limits) {
    if (::syscall(SYS_prlimit64, 0, limit.resource, &limit.value, nullptr) != 0) {
      fail_child(failure_fd, errno, "set a resource limit", "");
    }
  }
  if (drop_privileges(context.identity, context.last_capability, &failed_step) != 0) {
    fail_child(failure_fd, errno, failed_step, "");
  }
  die_with_parent_again(failure_fd);
  const char* failed_path = "";
  if (apply_landlock(*context.landlock, &failed_path) != 0) {
    fail_child(failure_fd, errno, "apply the landlock rules", failed_path);
  }
  // The profile refuses seccomp(2) itself, so the stacked filter goes first.
  if (context.memory_pinning_filter != nullptr &&
      ::syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, context.memory_pinning_filter) != 0) {
    fail_child(failure_fd, errno, "install the seccomp filter against memory held outside RLIMIT_AS", "");
  }
  if (context.seccomp->install() != 0) fail_child(failure_fd, errno, "install the seccomp filter", "");

  // Everything deskd held is left behind here: execveat replaces the memory this child copied or shares.
  char spec_text[12];
  char failure_text[12];
  decimal(installed.spec, spec_text);
  decimal(installed.failure, failure_text);
  char name[] = "deskd-init";
  char* const arguments[] = {name, spec_text, failure_text, nullptr};
  char* const no_environment[] = {nullptr};
  // The kernel's signal set is 8 bytes, the first of glibc's sigset_t.
  if (context.signal_mask != nullptr &&
      ::syscall(SYS_rt_sigprocmask, SIG_SETMASK, context.signal_mask, nullptr, sizeof(std::uint64_t)) != 0) {
    fail_child(failure_fd, errno, "restore the signal mask", "");
  }
  ::syscall(SYS_execveat, installed.image, "", arguments, no_environment, AT_EMPTY_PATH);
  fail_child(failure_fd, errno, "execute deskd-init from its memfd", "");
}

}  // namespace deskd::sandbox
