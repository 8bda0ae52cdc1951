#pragma once
// What isolation this host supports, for `deskd doctor` and for the launcher's choices
// (landlock ABI, cgroup delegation). Every probe is read-only and quick.

#include <optional>
#include <string>
#include <vector>

namespace deskd::sandbox {

/// One piece of isolation and whether this host has it.
struct SupportCheck {
  std::string name;        ///< e.g. "user namespaces", "seccomp", "landlock".
  bool available = false;
  bool required = false;   ///< Without it no full sandbox can start.
  std::string detail;      ///< What was found, e.g. "ABI 6", "max_user_namespaces is 0".
  std::string fix;         ///< How to get it, when it is missing; empty otherwise.
};

/// Everything `deskd doctor` reports, in a stable order.
std::vector<SupportCheck> check_host_support();

/// Whether every required check passed.
bool full_sandbox_possible(const std::vector<SupportCheck>& checks);

/// The cgroup v2 folder deskd may create sandbox cgroups in (a delegated subtree with the
/// memory and pids controllers enabled for children), or nullopt when there is none.
std::optional<std::string> delegated_cgroup_directory();

}  // namespace deskd::sandbox
