#pragma once
// Per-desk cgroups: each desk gets one cgroup with its memory, process and CPU limits, for
// the desk as a whole (rlimits count per process or per uid), and each of its sandboxes a
// child cgroup without limits of its own:
//   <instance-…>/desk-<hex>/sandbox-<hex>   (names random, never a host pid)
// A process that runs one sandbox and exits (`deskd sandbox`, DeskCgroupSlot::Use) makes
// one folder instead, <instance-…>, which is the desk's and the sandbox's cgroup at once.
// Two kinds:
//   - cgroup v2, when deskd has a delegated subtree (systemd's Delegate=yes);
//   - cgroup v1, when deskd is root on a hybrid host whose memory and pids controllers are
//     on cgroup v1 (the same folders in each controller hierarchy).
// Without either, launches fall back to rlimits and `deskd doctor` says so.

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "base/result.h"
#include "base/unique_fd.h"
#include "sandbox/desk_cgroup.h"
#include "sandbox/host_support.h"
#include "sandbox/sandbox_spec.h"

namespace deskd::sandbox {

/// How often a sandbox ran into its limits: counters the kernel keeps for its cgroup.
struct LimitHits {
  std::uint64_t process_limit = 0;  ///< forks refused at pids.max
  std::uint64_t memory_kills = 0;   ///< processes killed at the memory limit
  bool operator==(const LimitHits&) const = default;
};

enum class CgroupVersion { two, one };

/// One desk's cgroup, with the desk's limits. Held by each sandbox of the desk; destroying
/// it (when the last is gone) removes it.
class DeskCgroup {
 public:
  /// `locks`: flocks held on the folders until they are removed (a single-use desk's
  /// folders are instance folders, cgroup_instance.h).
  DeskCgroup(CgroupVersion version, std::vector<std::string> folders, std::vector<UniqueFd> locks = {})
      : version_(version), folders_(std::move(folders)), locks_(std::move(locks)) {}
  DeskCgroup(const DeskCgroup&) = delete;
  DeskCgroup& operator=(const DeskCgroup&) = delete;
  ~DeskCgroup();

  CgroupVersion version() const { return version_; }
  /// v2: the one folder; v1: memory, pids, then cpu when the desk has a CPU limit.
  const std::vector<std::string>& folders() const { return folders_; }
  /// Forks refused at the desk's pids.max, where the kernel counts them at the desk (v2
  /// since Linux 6.13 counts at the cgroup whose limit was hit; before, and on v1, at the
  /// forking cgroup: the sandbox's).
  std::uint64_t process_limit_hits() const;

 private:
  CgroupVersion version_;
  std::vector<std::string> folders_;
  std::vector<UniqueFd> locks_;  // released after the folders are removed
  mutable std::mutex mutex_;
  mutable UniqueFd process_counter_;
};

/// One sandbox's cgroup, inside its desk's. Destroying it kills whatever is left in it and
/// removes it.
class SandboxCgroup {
 public:
  using Version = CgroupVersion;
  /// `folders` empty: the sandbox's cgroup is the desk's own (a DeskCgroupSlot of one
  /// sandbox), which the desk removes.
  SandboxCgroup(std::shared_ptr<DeskCgroup> desk, std::vector<std::string> folders, UniqueFd directory)
      : desk_(std::move(desk)),
        is_desk_(folders.empty()),
        folders_(is_desk_ ? desk_->folders() : std::move(folders)),
        directory_(std::move(directory)) {}
  SandboxCgroup(SandboxCgroup&& other) noexcept = default;
  SandboxCgroup& operator=(SandboxCgroup&& other) noexcept;
  SandboxCgroup(const SandboxCgroup&) = delete;
  SandboxCgroup& operator=(const SandboxCgroup&) = delete;
  ~SandboxCgroup();

  Version version() const { return desk_->version(); }
  /// The cgroup's folders: one for v2, one per controller hierarchy for v1.
  const std::vector<std::string>& folders() const { return folders_; }
  /// An O_DIRECTORY descriptor of the v2 folder, for clone3's CLONE_INTO_CGROUP; -1 for v1.
  int directory_fd() const { return directory_.get(); }
  /// Where the sandbox's first process must be written, when clone3 did not place it.
  std::vector<std::string> procs_files() const;
  /// The counters now (0 for a counter this kernel does not keep); the process limit is the
  /// desk's, so a fork refused in another sandbox of the desk counts too. Keeps the two counter
  /// files open after the first call: a desk's bash asks before and after every command.
  LimitHits limit_hits() const;

  /// The tasks in the sandbox's cgroup now (pids.current: its init, the command and what
  /// the command left running); nullopt when this kernel keeps no count for it.
  std::optional<std::uint64_t> tasks() const;

  /// Kills every process in the cgroup (cgroup.kill, or SIGKILL to each listed process).
  void kill_all();

 private:
  void destroy();
  std::shared_ptr<DeskCgroup> desk_;  // released after this cgroup is removed
  bool is_desk_ = false;              // the desk's folders: the desk removes them
  std::vector<std::string> folders_;
  UniqueFd directory_;
  mutable UniqueFd process_counter_;  // pids.events, opened at the first limit_hits()
  mutable UniqueFd memory_counter_;   // memory.events (v2) or memory.oom_control (v1)
};

/// Creates a cgroup for one sandbox inside its desk's (made with `limits` by `desk` when no
/// sandbox of the desk holds it): v2 under the delegated subtree, else v1 under deskd's own
/// cgroups when deskd is root. Returns nullopt when the host has neither (the rlimit
/// fallback applies); an error when one exists but the cgroup cannot be made (the launch
/// must not go on).
Result<std::optional<SandboxCgroup>> create_sandbox_cgroup(DeskCgroupSlot& desk, const ResourceLimits& limits);

/// Which kind of per-desk limits this host gives deskd: "cgroup v2", "cgroup v1" or
/// "rlimits", with a sentence for `deskd doctor`.
SupportCheck check_desk_limits();

}  // namespace deskd::sandbox
