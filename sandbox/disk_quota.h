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
//
// The mounts last as long as the desk: PlacesQuotaMounts takes them down when the desk is
// done, and a deskd started after a killed one adopts what it left (the same loop device,
// the same mounts) instead of stacking new ones.

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>

#include "base/result.h"
#include "sandbox/sandbox_spec.h"

namespace deskd::sandbox {

struct DiskQuota {
  std::uint64_t bytes = 0;
  std::uint64_t inodes = 0;
};

struct QuotaHolders;

/// One desk's hold on its quota mounts (move-only). When the last holder in this deskd lets
/// go, the binds over the places are unmounted, then the image, and its loop device is made
/// sure to be detached; each unmount is checked against the mount table (only deskd's own
/// mounts of the image are taken down) and never follows a link at a place's path.
/// Failures are reported through the `report` given to give_places_a_quota, never thrown.
class PlacesQuotaMounts {
 public:
  using Report = std::function<void(const std::string&)>;

  PlacesQuotaMounts() = default;  ///< holds nothing
  PlacesQuotaMounts(PlacesQuotaMounts&& other) noexcept = default;
  PlacesQuotaMounts& operator=(PlacesQuotaMounts&& other) noexcept;
  PlacesQuotaMounts(const PlacesQuotaMounts&) = delete;
  PlacesQuotaMounts& operator=(const PlacesQuotaMounts&) = delete;
  ~PlacesQuotaMounts();

  /// Lets go now; when this was the last holder, takes the mounts down. The error lists what
  /// could not be taken down. Afterwards the handle holds nothing. `patience`: how long to
  /// wait for the loop device to detach itself (the kernel lets go of it once the desk's
  /// last sandbox namespace is torn down, just after its processes end): short on the
  /// event loop (a reload, the destructor), longer when deskd stops.
  Result<void> release(std::chrono::milliseconds patience = std::chrono::milliseconds(200));
  /// Whether this handle still holds the mounts (not released, not moved from).
  bool holds() const { return holders_ != nullptr; }

 private:
  friend Result<PlacesQuotaMounts> give_places_a_quota(const SandboxSpec&, const std::filesystem::path&,
                                                       const DiskQuota&, Report);
  void release_and_report() noexcept;
  std::shared_ptr<QuotaHolders> holders_;
  Report report_;
};

/// Root deskd only. Makes (once) `folder`/places.img, mounts it at `folder`/places, moves
/// what the writable places held into it the first time, and binds each place over the
/// desk's own (nosuid, nodev). What is in place already (this deskd's, or a killed one's)
/// is adopted: the loop device already attached to the image, its mount, each place's bind
/// (made nosuid and nodev again, a stacked copy taken off). Refused: an image attached to
/// two loop devices, and a mount that is not the image's at its mount point or at a place.
/// The places in the image belong to the spec's uid/gid. Errors name the step. `report`
/// (stderr when empty) hears what went wrong when the mounts are taken down.
Result<PlacesQuotaMounts> give_places_a_quota(const SandboxSpec& spec, const std::filesystem::path& folder,
                                              const DiskQuota& quota, PlacesQuotaMounts::Report report = {});

}  // namespace deskd::sandbox
