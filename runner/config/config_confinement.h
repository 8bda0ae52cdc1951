#pragma once
// Where a desk folder may lie, judged before any sandbox starts: never `/` or a folder the
// whole host shares, never inside the system, and never behind a folder that the desk's
// sandbox could not search. The config loader refuses such a desk; the sandbox may ask the
// same questions (which host folders it shows as they are, which it makes up itself).

#include <sys/types.h>

#include <filesystem>
#include <span>

#include "base/result.h"
#include "sandbox/sandbox_spec.h"

namespace deskd::app {

/// The host's system folders that a sandbox's minimal view shows as they are on the host
/// (read-only): /usr, /bin, /sbin, /lib, /lib32, /lib64, /libx32, /etc, /opt.
std::span<const std::filesystem::path> shown_system_folders();

/// Whether `path` (absolute, normal) is one of shown_system_folders() or lies inside one.
/// Outside them, the sandbox creates a desk folder's missing ancestors on its own tmpfs.
bool is_inside_shown_system_folder(const std::filesystem::path& path);

/// Refuses a desk folder (absolute, resolved) that is `/`, a top-level folder the host
/// shares (/usr, /etc, /home, /root, /var, /srv, /tmp, /opt, /dev, /run, ...), or lies inside
/// one that belongs to the system (/usr, /etc, /bin, /sbin, /lib*, /boot, /dev, /proc,
/// /sys, /run, /var/run). A folder of its own inside /opt, /srv, /home, /root, /var or
/// /tmp passes. The error is a sentence that names the folder and says where to put it.
Result<void> check_desk_folder_placement(const std::filesystem::path& desk_folder);

/// Refuses a read-only path (absolute, resolved) that would undo the sandbox's own view: `/`
/// (that is host_view "full"), /tmp itself, and anything in /proc, /sys, /dev, /run or
/// /var/run, which the sandbox replaces so that no host device or Unix socket is reachable.
Result<void> check_read_only_path(const std::filesystem::path& read_only_path);

/// Refuses a desk folder (absolute, resolved) that the desk's sandbox could not reach: one
/// of its ancestors inside a shown system folder gives others no search permission (o+x)
/// and is not deskd's own. An ancestor owned by `deskd_uid` counts as reachable only when
/// that is not root: under a root deskd each desk runs as a uid of its own. In the minimal
/// view, ancestors outside the shown system folders are not looked at (the sandbox makes the
/// way to the desk itself); in the full view every ancestor is. Ones that cannot be examined
/// are not counted.
/// The error names the ancestor, its mode in octal and the fix.
Result<void> check_desk_folder_reachable(const std::filesystem::path& desk_folder, uid_t deskd_uid,
                                         sandbox::HostView view = sandbox::HostView::minimal);

}  // namespace deskd::app
