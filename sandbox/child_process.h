#pragma once
// What the cloned child does, from clone to exec. Everything it reads is prepared by the
// parent in a ChildContext before the clone; the child only makes raw system calls
// (deskd is multithreaded: after a clone only async-signal-safe calls are allowed).
//
// The child is pid 1 of the sandbox's pid namespace. After building the sandbox (ids,
// mounts, limits, descriptors, capabilities, landlock, seccomp) it executes deskd-init
// (sandbox/init/) from its sealed memfd, with an empty environment: from then on pid 1 is a
// fresh, tiny program holding nothing of deskd's memory. deskd-init runs the command (or
// serves the desk's file opens) as init_protocol.h describes.

#include <signal.h>
#include <sys/resource.h>

#include <string>
#include <vector>

#include "sandbox/credentials.h"
#include "sandbox/egress_relay.h"
#include "sandbox/landlock_rules.h"
#include "sandbox/mount_plan.h"
#include "sandbox/seccomp_profile.h"

namespace deskd::sandbox {

/// A resource limit to set with setrlimit.
struct ResourceLimit {
  int resource;
  rlimit value;
};

/// Everything the child needs, prepared before the clone.
struct ChildContext {
  int sync_fd = -1;      ///< The parent writes one byte here once the id maps are written.
  int failure_fd = -1;   ///< ChildFailure records go here; close-on-exec.
  /// Descriptors to install as 0, 1, 2, 3, ...; -1 keeps the current one (only for 0-2).
  std::vector<int> descriptors = {-1, -1, -1};
  IdentityPlan identity;
  int last_capability = 0;
  const std::vector<MountStep>* mount_steps = nullptr;
  const LandlockPlan* landlock = nullptr;
  const SeccompProgram* seccomp = nullptr;
  /// With refusals reported: `seccomp` with its refusals sent to a listener
  /// (SeccompProgram::with_refusals_notified), installed instead of it when the kernel
  /// takes SECCOMP_FILTER_FLAG_NEW_LISTENER, the listener going over `refusal_channel_fd`
  /// (listener_handover.h). nullptr and -1 otherwise.
  const SeccompProgram* reporting_seccomp = nullptr;
  int refusal_channel_fd = -1;
  /// Installed before `seccomp` where no cgroup counts the sandbox's memory
  /// (memory_pinning_filter.h); nullptr otherwise.
  const sock_fprog* memory_pinning_filter = nullptr;
  std::vector<ResourceLimit> limits;
  const char* hostname = nullptr;
  bool bring_up_loopback = false;
  /// network = "allowlist" with names on ports below 1024: the lowest port the forwarder
  /// must bind without a capability (the sandbox's own network's
  /// net.ipv4.ip_unprivileged_port_start); -1 leaves it.
  int unprivileged_port_start = -1;
  int init_image_fd = -1;  ///< deskd-init's sealed memfd (init_image.h)
  int init_spec_fd = -1;   ///< the memfd with what deskd-init is to do (init_protocol.h)
  /// cgroup v1: the sandbox's cgroup.procs files, opened by the parent, which the child
  /// writes itself into. The write waits for an RCU grace period (up to ~11 ms); paid by
  /// the child, it does not hold up the parent's event loop.
  struct CgroupJoin {
    int fd;
    const char* path;
  };
  std::vector<CgroupJoin> cgroup_joins;
  /// The signal mask to give deskd-init, set when the parent blocked every signal for a
  /// child sharing its memory (memory_sharing_clone.h); nullptr keeps the inherited one.
  const sigset_t* signal_mask = nullptr;
};

/// The child's whole life: its steps in order, each returning a StepResult
/// (child_failure.h). Never returns: becomes deskd-init, or exits with 125 after writing
/// the first failed step's ChildFailure to the failure pipe.
[[noreturn]] void run_sandbox_child(const ChildContext& context);

}  // namespace deskd::sandbox
