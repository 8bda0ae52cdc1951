#pragma once
// Per-sandbox cgroups: each sandbox gets its own cgroup with its memory, process and CPU
// limits, for the sandbox as a whole (rlimits count per process or per uid). Two kinds:
//   - cgroup v2, when deskd has a delegated subtree (systemd's Delegate=yes);
//   - cgroup v1, when deskd is root on a hybrid host whose memory and pids controllers are
//     on cgroup v1 (one folder per controller hierarchy).
// Without either, launches fall back to rlimits and `deskd doctor` says so.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/result.h"
#include "base/unique_fd.h"
#include "sandbox/host_support.h"
#include "sandbox/sandbox_spec.h"

namespace deskd::sandbox {

/// How often a sandbox ran into its limits: counters the kernel keeps for its cgroup.
struct LimitHits {
  std::uint64_t process_limit = 0;  ///< forks refused at pids.max
  std::uint64_t memory_kills = 0;   ///< processes killed at the memory limit
  bool operator==(const LimitHits&) const = default;
};

/// One sandbox's cgroup. Destroying it kills whatever is left in it and removes it.
class SandboxCgroup {
 public:
  enum class Version { two, one };
  SandboxCgroup(Version version, std::vector<std::string> folders, UniqueFd directory)
      : version_(version), folders_(std::move(folders)), directory_(std::move(directory)) {}
  SandboxCgroup(SandboxCgroup&& other) noexcept = default;
  SandboxCgroup& operator=(SandboxCgroup&& other) noexcept;
  SandboxCgroup(const SandboxCgroup&) = delete;
  SandboxCgroup& operator=(const SandboxCgroup&) = delete;
  ~SandboxCgroup();

  Version version() const { return version_; }
  /// The cgroup's folders: one for v2, one per controller hierarchy for v1.
  const std::vector<std::string>& folders() const { return folders_; }
  /// An O_DIRECTORY descriptor of the v2 folder, for clone3's CLONE_INTO_CGROUP; -1 for v1.
  int directory_fd() const { return directory_.get(); }
  /// Where the sandbox's first process must be written, when clone3 did not place it.
  std::vector<std::string> procs_files() const;
  /// The counters now (0 for a counter this kernel does not keep). Keeps the two counter
  /// files open after the first call: a desk's bash asks before and after every command.
  LimitHits limit_hits() const;

  /// Kills every process in the cgroup (cgroup.kill, or SIGKILL to each listed process).
  void kill_all();

 private:
  void destroy();
  Version version_ = Version::two;
  std::vector<std::string> folders_;
  UniqueFd directory_;
  mutable UniqueFd process_counter_;  // pids.events, opened at the first limit_hits()
  mutable UniqueFd memory_counter_;   // memory.events (v2) or memory.oom_control (v1)
};

/// Creates a cgroup for one sandbox with the spec's limits: v2 under the delegated subtree,
/// else v1 under deskd's own cgroups when deskd is root. Returns nullopt when the host has
/// neither (the rlimit fallback applies); an error when one exists but the cgroup cannot be
/// made (the launch must not go on).
Result<std::optional<SandboxCgroup>> create_sandbox_cgroup(const ResourceLimits& limits);

/// Which kind of per-desk limits this host gives deskd: "cgroup v2", "cgroup v1" or
/// "rlimits", with a sentence for `deskd doctor`.
SupportCheck check_desk_limits();

}  // namespace deskd::sandbox
