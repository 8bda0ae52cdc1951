#pragma once
// Landlock, when the kernel has it: the sandbox may write only beneath its writable places,
// /tmp, /dev/shm and a few device files — a second wall behind the read-only mounts, which
// also holds if a mount were ever undone. From ABI 6 on, it also scopes abstract Unix
// sockets and signals to the sandbox.

#include <cstdint>
#include <string>
#include <vector>

#include "sandbox/child_failure.h"
#include "sandbox/sandbox_spec.h"

namespace deskd::sandbox {

/// One path and the write rights granted beneath it.
struct LandlockRule {
  std::string path;
  std::uint64_t allowed_access = 0;
  bool is_file = false;
};

/// What the child installs. `abi` 0 means the kernel has no landlock: nothing is done.
struct LandlockPlan {
  int abi = 0;
  std::uint64_t handled_access = 0;
  std::uint64_t scoped = 0;
  std::vector<LandlockRule> rules;
};

/// What the kernel says of landlock: its ABI version (0 when unavailable or disabled) and,
/// then, the errno landlock_create_ruleset gave (EOPNOTSUPP: built in, not enabled at boot).
struct LandlockSupport {
  int abi = 0;
  int error_number = 0;
};
LandlockSupport probe_landlock();

/// The kernel's landlock ABI version, 0 when landlock is unavailable or disabled.
inline int kernel_landlock_abi() { return probe_landlock().abi; }

/// The rules for `spec` on a kernel with landlock ABI `abi`.
LandlockPlan plan_landlock(const SandboxSpec& spec, int abi);

/// Child, after no_new_privs, in the final root: installs the plan. Async-signal-safe; a
/// failure names the rule's path that could not be added, if one could not.
StepResult apply_landlock(const LandlockPlan& plan);

}  // namespace deskd::sandbox
