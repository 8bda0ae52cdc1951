#pragma once
// Internal to host_support: what host_support.cpp and host_namespace_probe.cpp share.
// Not for use outside sandbox/host_*.cpp.

#include <optional>
#include <string>

#include "sandbox/host_support.h"

namespace deskd::sandbox::host_support_internal {

// --- host_support.cpp ---

/// "EPERM (Operation not permitted)".
std::string describe_errno(int error_number);

/// The whole first line of a small file (a sysctl under /proc/sys, a cgroup file), without
/// its newline; nullopt when it cannot be read.
std::optional<std::string> read_first_line(const std::string& path);

/// The first line of `path` as a number; nullopt when absent or not a number.
std::optional<long> read_number(const std::string& path);

/// The "Seccomp:" field of /proc/self/status (0 none, 1 strict, 2 filter); nullopt when
/// the kernel has no seccomp (the field is then absent).
std::optional<int> seccomp_mode_of_this_process();

// --- host_namespace_probe.cpp ---

/// Whether this process can create a user namespace and map its ids in it (tried in a
/// forked child); when it runs as root, also whether uid 65534 could.
SupportCheck check_user_namespaces();

/// Whether a user+mount namespace can mount a tmpfs and pivot_root into it (tried in a
/// forked child). Not tried when user namespaces are unavailable.
SupportCheck check_mount_namespace(bool user_namespaces_available);

// --- host_cgroup.cpp ---

/// Whether this process sits in a delegated cgroup v2 subtree with the memory and pids
/// controllers; the detail names the folder, or the rlimit fallback.
SupportCheck check_cgroup_delegation();

}  // namespace deskd::sandbox::host_support_internal
