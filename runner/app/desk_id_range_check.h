#pragma once
// `deskd doctor`'s check of the desk uid range: under a root deskd each desk runs as an id of
// that range, so nothing else on the host may own one — no user or group, no subordinate id
// range (/etc/subuid, /etc/subgid: rootless containers map those), no running process.

#include <sys/types.h>

#include <cstdint>
#include <filesystem>
#include <set>

#include "sandbox/host_support.h"

namespace deskd::app {

/// Where the host's ids are written down; tests point these elsewhere.
struct HostIdFiles {
  std::filesystem::path passwd = "/etc/passwd";
  std::filesystem::path group = "/etc/group";
  std::filesystem::path subuid = "/etc/subuid";
  std::filesystem::path subgid = "/etc/subgid";
  std::filesystem::path proc = "/proc";
};

/// Checks [first, first + count) against the host: every user and group whose id lies in it,
/// every subordinate range that overlaps it, every process with a uid (real, effective, saved
/// or filesystem) in it but those of `desk_ids` (deskd's own desks) and those with a process
/// named "deskd" among their ancestors (a running deskd's desks, only counted). The
/// check is required only when `required` (deskd runs as root); its detail lists what was
/// found, a few of each kind. Missing files count as empty; unreadable ones are named.
sandbox::SupportCheck check_desk_id_range(std::uint32_t first, std::uint32_t count, const std::set<uid_t>& desk_ids,
                                          bool required, const HostIdFiles& files = {});

}  // namespace deskd::app
