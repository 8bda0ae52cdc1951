#include "sandbox/child_process.h"

#include <fcntl.h>
#include <linux/close_range.h>
#include <net/if.h>
#include <poll.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <climits>

#include "sandbox/child_failure.h"

namespace deskd::sandbox {
namespace {

// The command's pid, for the init's signal handlers.
volatile pid_t command_pid = 0;

void forward_signal(int signal_number) {
  if (command_pid > 0) ::kill(command_pid, signal_number);
}

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

// Installs context.descriptors as 0, 1, 2, 3, ... and closes every other descriptor but
// the failure pipe, so nothing of the daemon (sockets, journals, other desks' pipes) is
// reachable from the sandbox. Returns the failure pipe's new number.
int install_descriptors(const ChildContext& context, int failure_fd) {
  const int count = static_cast<int>(context.descriptors.size());
  // Anything that dup2 is about to overwrite is first moved above the targets.
  int failure = ::fcntl(failure_fd, F_DUPFD_CLOEXEC, count);
  if (failure < 0) fail_child(failure_fd, errno, "move the failure pipe aside", "");
  int sources[64];
  if (count > 64) fail_child(failure, EMFILE, "install the descriptors", "");
  for (int index = 0; index < count; ++index) {
    sources[index] = context.descriptors[static_cast<std::size_t>(index)];
    if (sources[index] >= 0 && sources[index] < count) {
      sources[index] = ::fcntl(sources[index], F_DUPFD_CLOEXEC, count);
      if (sources[index] < 0) fail_child(failure, errno, "move a descriptor aside", "");
    }
  }
  for (int index = 0; index < count; ++index) {
    if (sources[index] < 0) continue;
    if (::dup2(sources[index], index) < 0) fail_child(failure, errno, "install the descriptors", "");
  }
  const unsigned first_free = static_cast<unsigned>(count < 3 ? 3 : count);
  if (static_cast<unsigned>(failure) > first_free &&
      ::syscall(SYS_close_range, first_free, static_cast<unsigned>(failure - 1), 0U) != 0) {
    fail_child(failure, errno, "close the inherited descriptors", "");
  }
  if (::syscall(SYS_close_range, static_cast<unsigned>(failure + 1), UINT_MAX, 0U) != 0) {
    fail_child(failure, errno, "close the inherited descriptors", "");
  }
  return failure;
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

void reset_signals() {
  struct sigaction default_action {};
  default_action.sa_handler = SIG_DFL;
  for (int signal_number = 1; signal_number < NSIG; ++signal_number) {
    ::sigaction(signal_number, &default_action, nullptr);  // fails harmlessly for SIGKILL/SIGSTOP
  }
  sigset_t empty;
  ::sigemptyset(&empty);
  ::sigprocmask(SIG_SETMASK, &empty, nullptr);
}

[[noreturn]] void execute_command(const ChildContext& context, int failure_fd) {
  reset_signals();
  int last_error = ENOENT;
  for (const char* candidate : context.executable_candidates) {
    ::execve(candidate, context.argv.data(), context.envp.data());
    // Like a shell: keep looking after "not found", remember "not executable".
    if (errno != ENOENT && errno != ENOTDIR) last_error = errno;
  }
  const char* name = context.argv[0];
  fail_child(failure_fd, last_error, "execute the command", name, last_error == ENOENT ? 127 : 126);
}

[[noreturn]] void run_init(pid_t command) {
  // The init needs no descriptor: holding the command's pipes would keep them open after
  // the command's death.
  ::syscall(SYS_close_range, 0U, UINT_MAX, 0U);
  command_pid = command;
  struct sigaction forward {};
  forward.sa_handler = forward_signal;
  ::sigemptyset(&forward.sa_mask);
  for (int signal_number : {SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2}) {
    ::sigaction(signal_number, &forward, nullptr);
  }
  sigset_t empty;
  ::sigemptyset(&empty);
  ::sigprocmask(SIG_SETMASK, &empty, nullptr);  // the launcher may have blocked them
  for (;;) {
    int status = 0;
    const pid_t reaped = ::waitpid(-1, &status, 0);
    if (reaped < 0) {
      if (errno == EINTR) continue;
      ::_exit(125);  // ECHILD: the command is gone without being seen; cannot happen
    }
    if (reaped != command) continue;  // an orphan, reaped
    if (WIFEXITED(status)) ::_exit(WEXITSTATUS(status));
    ::_exit(128 + WTERMSIG(status));
  }
}

}  // namespace

void run_sandbox_child(const ChildContext& context) {
  int failure_fd = context.failure_fd;
  const char* failed_step = "";
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

  if (become_sandbox_identity(context.identity, &failed_step) != 0) {
    fail_child(failure_fd, errno, failed_step, "");
  }
  die_with_parent_again(failure_fd);
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
  for (const ResourceLimit& limit : context.limits) {
    if (::syscall(SYS_prlimit64, 0, limit.resource, &limit.value, nullptr) != 0) {
      fail_child(failure_fd, errno, "set a resource limit", "");
    }
  }
  if (::setsid() < 0) fail_child(failure_fd, errno, "start a new session", "");
  failure_fd = install_descriptors(context, failure_fd);
  if (drop_privileges(context.identity, context.last_capability, &failed_step) != 0) {
    fail_child(failure_fd, errno, failed_step, "");
  }
  die_with_parent_again(failure_fd);
  const char* failed_path = "";
  if (apply_landlock(*context.landlock, &failed_path) != 0) {
    fail_child(failure_fd, errno, "apply the landlock rules", failed_path);
  }
  if (context.seccomp->install() != 0) fail_child(failure_fd, errno, "install the seccomp filter", "");

  const pid_t command = static_cast<pid_t>(::syscall(SYS_clone, SIGCHLD, nullptr, nullptr, nullptr, 0));
  if (command < 0) fail_child(failure_fd, errno, "start the command", "");
  if (command == 0) execute_command(context, failure_fd);
  run_init(command);
}

}  // namespace deskd::sandbox
