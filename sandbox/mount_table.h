#pragma once
// deskd's view of its own mount namespace, read from /proc/self/mountinfo: which device is
// mounted where, and in which order (a later line stacks on an earlier one at the same
// mount point). Used to adopt, rather than stack, the mounts a killed deskd left behind.

#include <sys/types.h>

#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"

namespace deskd::sandbox {

struct MountEntry {
  dev_t device = 0;          ///< the mounted file system's device (major:minor)
  std::string root;          ///< the folder of that file system that is mounted ("/" or "/notes")
  std::string mount_point;   ///< where, as an absolute path in deskd's root
};

/// The entries of a mountinfo text, in its order; octal escapes (\040 for a space) decoded.
/// Malformed lines are skipped.
std::vector<MountEntry> parse_mount_table(std::string_view mountinfo);

/// The mounts of deskd's mount namespace now. Fails only when /proc/self/mountinfo cannot be read.
Result<std::vector<MountEntry>> read_mount_table();

/// How many mounts of `device` showing `root` lie on top of the stack at `mount_point`
/// (counted from the most recent down to the first other mount); 0 when the topmost mount
/// there is another.
std::size_t mounts_on_top(const std::vector<MountEntry>& table, const std::string& mount_point, dev_t device,
                          std::string_view root);

/// Every mount at exactly `mount_point`, oldest first.
std::vector<MountEntry> mounts_at(const std::vector<MountEntry>& table, const std::string& mount_point);

}  // namespace deskd::sandbox
