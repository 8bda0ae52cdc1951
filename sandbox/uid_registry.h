#pragma once
// The host-wide register of the uids root deskd instances hand to their desks. Each deskd
// keeps its own <state folder>/desk-ids (desk_ids.h); this register, one file for the whole
// host under an exclusive lock, keeps two deskd with different state folders from handing
// out the same uid, and lets the ad-hoc commands (`deskd sandbox`, `shell`, `mcp`, `run`)
// refuse a folder that a served desk owns. One line an entry: uid, state folder, desk name
// and desk folder, separated by tabs. An entry whose state folder no longer holds a
// desk-ids file is stale and dropped.

#include <sys/types.h>

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "base/result.h"
#include "base/unique_fd.h"
#include "sandbox/sandbox_spec.h"

namespace deskd::sandbox {

/// Where the register lives unless a caller (a test) names another file.
inline constexpr const char* kUidRegistryFile = "/var/lib/deskd/uid-registry";

/// The host uid (and gid) the ad-hoc commands run a sandbox as under root: outside the
/// default desk uid range (1879048192 + 65536), which the config refuses to cover, and
/// never handed to a served desk.
inline constexpr uid_t kAdHocDeskUid = 2147418112;  // 0x7FFF0000, below 2^31 (some tools sign-extend)

struct UidRegistration {
  uid_t uid = 0;
  std::filesystem::path state_folder;
  std::string desk;
  std::filesystem::path desk_folder;
};

class UidRegistry {
 public:
  /// Opens the register at `file` (creating its folder) and takes its lock, held until
  /// the value is destroyed. Stale entries are dropped on reading.
  static Result<UidRegistry> lock(const std::filesystem::path& file = kUidRegistryFile);

  /// Every live registration.
  const std::vector<UidRegistration>& entries() const { return entries_; }
  /// The registration of `uid`, if any.
  const UidRegistration* holder_of(uid_t uid) const;
  /// The served desk whose folder is `folder`, inside it or holds it.
  const UidRegistration* desk_sharing_folder(const std::filesystem::path& folder) const;

  /// Records (or updates) `registration` and writes the register durably. Refuses a uid
  /// another state folder's desk holds, naming it.
  Result<void> record(const UidRegistration& registration);
  /// Records each of `registrations` as record() would, with one durable write of the
  /// register if any of them changed it. Each registration's own refusal (its uid is another
  /// state folder's desk's) is its element of the returned list, in order; a write that
  /// fails is the whole call's error.
  Result<std::vector<Result<void>>> record_all(const std::vector<UidRegistration>& registrations);

  UidRegistry(UidRegistry&&) noexcept = default;
  UidRegistry& operator=(UidRegistry&&) noexcept = default;

 private:
  UidRegistry(std::filesystem::path file, UniqueFd lock, std::vector<UidRegistration> entries)
      : file_(std::move(file)), lock_(std::move(lock)), entries_(std::move(entries)) {}
  std::filesystem::path file_;
  UniqueFd lock_;  // flock(LOCK_EX) on "<file>.lock", released when closed
  std::vector<UidRegistration> entries_;
};

/// Refuses (naming the desk and its deskd's state folder) a folder a served desk owns, for
/// the ad-hoc commands under root.
Result<void> refuse_served_desk_folder(const std::filesystem::path& folder,
                                       const std::filesystem::path& registry_file = kUidRegistryFile);

/// For the ad-hoc commands (deskd sandbox, run, shell, mcp) on `folder`: under a root deskd,
/// refuses a served desk's folder (the command would hand that desk's places to another uid,
/// or its own to the desk) and, unless --uid or --gid gave ids, runs the sandbox as
/// kAdHocDeskUid. Nothing for an unprivileged deskd.
Result<void> settle_ad_hoc_ids(const std::filesystem::path& folder, SandboxSettings& settings);

}  // namespace deskd::sandbox
