#pragma once
// cgroup v1, for a root deskd on a hybrid host (memory and pids on v1, as systemd's
// "hybrid" mode and many container hosts keep them): where deskd's own cgroups are in each
// controller's hierarchy. Internal to cgroup_limits.cpp.

#include <optional>
#include <string>

namespace deskd::sandbox::cgroup_v1 {

/// deskd's own cgroup folder in the v1 hierarchy of `controller` ("memory", "pids", "cpu"),
/// from /proc/self/mountinfo and /proc/self/cgroup; nullopt when that controller is not on
/// a v1 hierarchy here, or deskd cannot create cgroups in it (it is not root).
std::optional<std::string> own_folder(const std::string& controller);

}  // namespace deskd::sandbox::cgroup_v1
