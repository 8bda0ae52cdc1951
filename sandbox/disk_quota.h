#pragma once
// A disk and inode quota for a desk's writable places, enforced by the kernel: the places
// live on a file system image of their own (ext4, of the quota's size and inode count),
// loop-mounted by a root deskd and bound over Memory.md, memory/, notes/ and scratch/ on the
// host, so the person reading notes/ on the host and the desk see the same files. A desk
// past its quota gets ENOSPC in its own commands; the host file system (and deskd's state
// on it) cannot be filled through the places.
//
// Why an image and not project quotas: they need CONFIG_QUOTA (this kind of host's kernel
// has none) and a file system mounted with prjquota; an image works on any host with loop
// devices, at the price of a fixed-size file per desk and mounts on the host.

#include <cstdint>
#include <filesystem>

#include "base/result.h"
#include "sandbox/sandbox_spec.h"

namespace deskd::sandbox {

struct DiskQuota {
  std::uint64_t bytes = 0;
  std::uint64_t inodes = 0;
};

/// Root deskd only. Makes (once) `folder`/places.img, mounts it at `folder`/places, moves
/// what the writable places held into it the first time, and binds each place over the
/// desk's own (nosuid, nodev). Already in place: nothing is done. The places in the image
/// belong to the spec's uid/gid. Errors name the step.
Result<void> give_places_a_quota(const SandboxSpec& spec, const std::filesystem::path& folder, const DiskQuota& quota);

}  // namespace deskd::sandbox
