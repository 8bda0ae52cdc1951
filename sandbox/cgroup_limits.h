#pragma once
// Per-sandbox cgroups, when deskd has a delegated cgroup v2 subtree (systemd's
// Delegate=yes): each sandbox gets its own cgroup with memory.max, pids.max and cpu.max,
// and closing the sandbox kills the cgroup as a whole. Without delegation, launches fall
// back to rlimits and `deskd doctor` says so.

#include <cstdint>
#include <optional>
#include <string>

#include "base/result.h"
#include "base/unique_fd.h"
#include "sandbox/sandbox_spec.h"

namespace deskd::sandbox {

/// One sandbox's cgroup. Destroying it kills whatever is left in it and removes it.
class SandboxCgroup {
 public:
  SandboxCgroup(std::string path, UniqueFd directory) : path_(std::move(path)), directory_(std::move(directory)) {}
  SandboxCgroup(SandboxCgroup&& other) noexcept = default;
  SandboxCgroup& operator=(SandboxCgroup&& other) noexcept;
  SandboxCgroup(const SandboxCgroup&) = delete;
  SandboxCgroup& operator=(const SandboxCgroup&) = delete;
  ~SandboxCgroup();

  /// The cgroup's folder, e.g. /sys/fs/cgroup/system.slice/deskd.service/sandbox-12-1.
  const std::string& path() const { return path_; }
  /// An O_DIRECTORY descriptor of the folder, for clone3's CLONE_INTO_CGROUP.
  int directory_fd() const { return directory_.get(); }

  /// Kills every process in the cgroup (cgroup.kill, or SIGKILL to each listed process).
  void kill_all();

 private:
  void destroy();
  std::string path_;
  UniqueFd directory_;
};

/// Creates a cgroup for one sandbox under the delegated subtree, with the spec's limits.
/// Returns nullopt when the host has no delegated subtree (the rlimit fallback applies);
/// an error when there is one but the cgroup cannot be made (the launch must not go on).
Result<std::optional<SandboxCgroup>> create_sandbox_cgroup(const ResourceLimits& limits);

}  // namespace deskd::sandbox
