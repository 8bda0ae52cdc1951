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
#include "sandbox/listener_handover.h"

namespace deskd::sandbox {
namespace {

// What the steps change as they go: where the failure pipe is (installing the descriptors
// moves it) and where deskd-init's spec and image end up.
struct ChildState {
  int failure_fd = -1;
  int refusal_channel_fd = -1;  ///< listener_handover.h; -1 without one
  int spec_fd = -1;
  int image_fd = -1;
};

// Every step of the set-up has this shape, so that the child's life reads as one table.
using ChildStep = StepResult (*)(const ChildContext&, ChildState&);

// No core file before the limits are set, first: one would hold deskd's memory (which this
// child may share) and land in the folder it runs in.
StepResult forbid_core_files(const ChildContext&, ChildState&) {
  const rlimit no_core{0, 0};
  if (::setrlimit(RLIMIT_CORE, &no_core) != 0) return step_failed("set a resource limit");
  return step_succeeded();
}

// Die with the parent; the sync pipe below covers a parent that died before this step.
StepResult die_with_parent(const ChildContext&, ChildState&) {
  if (::prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) != 0) return step_failed("ask to die with the parent");
  return step_succeeded();
}

StepResult wait_for_identity_maps(const ChildContext& context, ChildState&) {
  char go = 0;
  ssize_t got = 0;
  do {
    got = ::read(context.sync_fd, &go, 1);
  } while (got < 0 && errno == EINTR);
  if (got != 1) return parent_gone();  // the parent is gone or failed to write the id maps
  ::close(context.sync_fd);
  return step_succeeded();
}

// Before anything else: every process the sandbox makes is counted in its cgroup.
StepResult join_cgroups(const ChildContext& context, ChildState&) {
  for (const ChildContext::CgroupJoin& join : context.cgroup_joins) {
    if (::write(join.fd, "0", 1) != 1) return step_failed("join its cgroup", join.path);
    ::close(join.fd);
  }
  return step_succeeded();
}

StepResult become_identity(const ChildContext& context, ChildState&) {
  return become_sandbox_identity(context.identity);
}

// The kernel clears the parent-death signal whenever the credentials change, as the id
// switch does under a root daemon; so it is set again. A parent that died in between has
// closed its end of the failure pipe, which poll reports as POLLERR on ours.
StepResult die_with_parent_again(const ChildContext& context, ChildState& state) {
  const StepResult asked = die_with_parent(context, state);
  if (!asked.ok()) return asked;
  pollfd descriptor{state.failure_fd, POLLOUT, 0};
  if (::poll(&descriptor, 1, 0) < 0 || (descriptor.revents & (POLLERR | POLLHUP)) != 0) return parent_gone();
  return step_succeeded();
}

// Before the mount plan, which makes /proc/sys read-only as container runtimes do.
StepResult open_forwarder_ports(const ChildContext& context, ChildState&) {
  return let_forwarder_bind_ports(context.unprivileged_port_start);
}

StepResult build_mounts(const ChildContext& context, ChildState&) { return run_mount_plan(*context.mount_steps); }

StepResult set_hostname(const ChildContext& context, ChildState&) {
  if (context.hostname == nullptr) return step_succeeded();
  std::size_t length = 0;
  while (context.hostname[length] != '\0') ++length;
  if (::sethostname(context.hostname, length) != 0) return step_failed("set the hostname");
  return step_succeeded();
}

StepResult bring_up_loopback(const ChildContext& context, ChildState&) {
  if (!context.bring_up_loopback) return step_succeeded();
  constexpr const char* kStep = "bring up the loopback interface";
  const int fd = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return step_failed(kStep, "lo");
  ifreq request{};
  copy_text(request.ifr_name, sizeof request.ifr_name, "lo");
  int result = ::ioctl(fd, SIOCGIFFLAGS, &request);
  if (result == 0) {
    request.ifr_flags = static_cast<short>(request.ifr_flags | IFF_UP | IFF_RUNNING);
    result = ::ioctl(fd, SIOCSIFFLAGS, &request);
  }
  const StepResult failed = step_failed(kStep, "lo");  // errno before the close
  ::close(fd);
  return result == 0 ? step_succeeded() : failed;
}

StepResult start_session(const ChildContext&, ChildState&) {
  if (::setsid() < 0) return step_failed("start a new session");
  return step_succeeded();
}

// Installs context.descriptors as 0, 1, 2, 3, ..., then deskd-init's spec, the failure
// pipe and deskd-init's image right after them, and closes every other descriptor, so
// nothing of the daemon (sockets, journals, other desks' pipes) is reachable from the
// sandbox. state.failure_fd follows the failure pipe as it moves, so that a failure here
// is still reported.
// The descriptors move before the limits apply: moving one aside takes a number above all
// of deskd's descriptors, which a busy deskd (hundreds of desks, a thousand clients) holds
// past the desk's RLIMIT_NOFILE. Once installed, the sandbox holds only a few low numbers.
StepResult install_descriptors(const ChildContext& context, ChildState& state) {
  const int commands = static_cast<int>(context.descriptors.size());
  const bool has_channel = context.refusal_channel_fd >= 0;
  const int total = commands + 3 + (has_channel ? 1 : 0);
  int sources[64 + 3];
  if (commands > 64) return {"install the descriptors", "", EMFILE};
  // Anything that dup2 is about to overwrite is first moved above the targets.
  const int failure = ::fcntl(state.failure_fd, F_DUPFD_CLOEXEC, total);
  if (failure < 0) return step_failed("move the failure pipe aside");
  state.failure_fd = failure;
  for (int index = 0; index < total; ++index) {
    int source = index < commands        ? context.descriptors[static_cast<std::size_t>(index)]
                 : index == commands     ? context.init_spec_fd
                 : index == commands + 1 ? failure
                 : index == commands + 2 ? context.init_image_fd
                                         : context.refusal_channel_fd;
    if (source >= 0 && source < total) {
      source = ::fcntl(source, F_DUPFD_CLOEXEC, total);
      if (source < 0) return step_failed("move a descriptor aside");
    }
    sources[index] = source;
  }
  for (int index = 0; index < total; ++index) {
    if (sources[index] < 0) continue;  // only 0-2 may be kept as they are
    if (::dup2(sources[index], index) < 0) return step_failed("install the descriptors");
  }
  state.failure_fd = commands + 1;
  if (::syscall(SYS_close_range, static_cast<unsigned>(total), UINT_MAX, 0U) != 0) {
    return step_failed("close the inherited descriptors");
  }
  // The spec and the failure pipe cross into deskd-init; its image needs no descriptor there.
  if (::fcntl(commands + 2, F_SETFD, FD_CLOEXEC) != 0) return step_failed("mark deskd-init's image");
  // The seccomp listener's channel is closed before the exec; close-on-exec in case.
  if (has_channel) {
    if (::fcntl(commands + 3, F_SETFD, FD_CLOEXEC) != 0) return step_failed("mark the seccomp listener's channel");
    state.refusal_channel_fd = commands + 3;
  }
  state.spec_fd = commands;
  state.image_fd = commands + 2;
  return step_succeeded();
}

StepResult set_limits(const ChildContext& context, ChildState&) {
  for (const ResourceLimit& limit : context.limits) {
    if (::syscall(SYS_prlimit64, 0, limit.resource, &limit.value, nullptr) != 0) {
      return step_failed("set a resource limit");
    }
  }
  return step_succeeded();
}

StepResult give_up_privileges(const ChildContext& context, ChildState&) {
  return drop_privileges(context.identity, context.last_capability);
}

StepResult restrict_paths(const ChildContext& context, ChildState&) { return apply_landlock(*context.landlock); }

// The reporting filter with its listener: handed to deskd at once and closed here, so that
// no process of the desk holds it. 1: installed and handed over; 0: the kernel has no user
// notification (or a listener is already in the chain: EBUSY), so nothing was installed.
int install_reporting_filter(const ChildContext& context, ChildState& state, StepResult& failed) {
  const int listener = context.reporting_seccomp->install_with_listener();
  if (listener < 0) {
    if (errno == EINVAL || errno == EBUSY || errno == EOPNOTSUPP) return 0;
    failed = step_failed("install the seccomp filter with its listener");
    return -1;
  }
  const int sent = send_listener(state.refusal_channel_fd, listener);
  // The filter is in place and its listener must reach deskd: without it every refused
  // call would get ENOSYS instead of EPERM. Fail closed.
  if (sent != 0) failed = step_failed("hand the seccomp listener to deskd");
  ::close(listener);
  return sent == 0 ? 1 : -1;
}

// The profile refuses seccomp(2) itself, so the stacked filter goes first.
StepResult install_seccomp_filters(const ChildContext& context, ChildState& state) {
  if (context.memory_pinning_filter != nullptr &&
      ::syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, context.memory_pinning_filter) != 0) {
    return step_failed("install the seccomp filter against memory held outside RLIMIT_AS");
  }
  int reporting = 0;
  StepResult failed = step_succeeded();
  if (context.reporting_seccomp != nullptr && state.refusal_channel_fd >= 0) {
    reporting = install_reporting_filter(context, state, failed);
  }
  if (state.refusal_channel_fd >= 0) {
    ::close(state.refusal_channel_fd);
    state.refusal_channel_fd = -1;
  }
  if (reporting < 0) return failed;
  if (reporting == 0 && context.seccomp->install() != 0) return step_failed("install the seccomp filter");
  return step_succeeded();
}

// The set-up, in order. Each step runs only if every one before it succeeded.
constexpr ChildStep kChildSteps[] = {
    forbid_core_files,
    die_with_parent,
    wait_for_identity_maps,
    join_cgroups,
    become_identity,
    die_with_parent_again,
    open_forwarder_ports,
    build_mounts,
    set_hostname,
    bring_up_loopback,
    start_session,
    install_descriptors,
    set_limits,
    give_up_privileges,
    die_with_parent_again,
    restrict_paths,
    install_seccomp_filters,
};

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

// Everything deskd held is left behind here: execveat replaces the memory this child copied
// or shares. Returns only on failure.
StepResult execute_init(const ChildContext& context, const ChildState& state) {
  char spec_text[12];
  char failure_text[12];
  decimal(state.spec_fd, spec_text);
  decimal(state.failure_fd, failure_text);
  char name[] = "deskd-init";
  char* const arguments[] = {name, spec_text, failure_text, nullptr};
  char* const no_environment[] = {nullptr};
  // The kernel's signal set is 8 bytes, the first of glibc's sigset_t.
  if (context.signal_mask != nullptr &&
      ::syscall(SYS_rt_sigprocmask, SIG_SETMASK, context.signal_mask, nullptr, sizeof(std::uint64_t)) != 0) {
    return step_failed("restore the signal mask");
  }
  ::syscall(SYS_execveat, state.image_fd, "", arguments, no_environment, AT_EMPTY_PATH);
  return step_failed("execute deskd-init from its memfd");
}

}  // namespace

void run_sandbox_child(const ChildContext& context) {
  ChildState state{.failure_fd = context.failure_fd};
  for (const ChildStep step : kChildSteps) {
    const StepResult result = step(context, state);
    if (!result.ok()) report_and_exit(state.failure_fd, result);
  }
  report_and_exit(state.failure_fd, execute_init(context, state));
}

}  // namespace deskd::sandbox
