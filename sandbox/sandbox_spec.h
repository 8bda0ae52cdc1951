#pragma once
// SandboxSpec: everything a launch needs to know about where a desk's processes live and
// what they may do — built from the desk's Confinement plus its sandbox settings.
// SandboxSpecBuilder collects every mistake and reports them together, once.

#include <sys/types.h>

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "base/result.h"
#include "policy/confinement.h"

namespace deskd::sandbox {

/// Whether the sandbox gets its own network (only `lo`) or shares the host's.
enum class NetworkMode { none, host };

/// Limits on what the sandbox may consume. Unset means "no limit beyond the defaults".
struct ResourceLimits {
  std::optional<std::uint64_t> memory_bytes;  ///< cgroup memory.max, else RLIMIT_AS
  std::uint64_t processes = 1024;             ///< cgroup pids.max, else RLIMIT_NPROC
  std::optional<double> cpus;                 ///< cgroup cpu.max in CPUs (e.g. 1.5)
  std::uint64_t file_size_bytes = std::uint64_t{4} << 30;  ///< RLIMIT_FSIZE
  std::uint64_t open_files = 1024;                         ///< RLIMIT_NOFILE
  std::uint64_t tmp_size_bytes = std::uint64_t{512} << 20;  ///< size of /tmp and /dev/shm
};

/// The complete, validated description of a sandbox.
struct SandboxSpec {
  policy::Confinement confinement;
  /// The confinement's hidden paths plus the sandbox's extra ones, resolved.
  std::vector<std::filesystem::path> hidden_paths{};
  /// Folders covered by an empty tmpfs so that no host Unix socket in them is reachable.
  std::vector<std::filesystem::path> runtime_directories{};
  NetworkMode network = NetworkMode::none;
  ResourceLimits limits{};
  /// The complete environment of the sandboxed command, as NAME=value.
  std::vector<std::string> environment{};
  std::string hostname = "deskd";
  /// Host ids the sandbox's processes run as when deskd runs as root.
  uid_t root_daemon_uid = 65534;
  gid_t root_daemon_gid = 65534;
  /// Where the command starts: the desk folder.
  std::filesystem::path working_directory{};
};

/// Builds a SandboxSpec; setters never fail, build() reports every problem at once.
class SandboxSpecBuilder {
 public:
  explicit SandboxSpecBuilder(policy::Confinement confinement);

  SandboxSpecBuilder& network(NetworkMode mode);
  SandboxSpecBuilder& memory_limit(std::uint64_t bytes);
  SandboxSpecBuilder& process_limit(std::uint64_t processes);
  SandboxSpecBuilder& cpu_limit(double cpus);
  SandboxSpecBuilder& file_size_limit(std::uint64_t bytes);
  SandboxSpecBuilder& open_files_limit(std::uint64_t files);
  /// Hides one more path (resolved now; a relative path starts at the desk folder).
  SandboxSpecBuilder& hide(const std::filesystem::path& path);
  /// Copies the daemon's variable NAME into the sandbox, if it is set.
  SandboxSpecBuilder& allow_environment_variable(const std::string& name);
  SandboxSpecBuilder& hostname(std::string name);
  /// The host uid/gid for the sandbox when deskd is root; 0 is refused.
  SandboxSpecBuilder& run_as(uid_t uid, gid_t gid);

  /// The spec, or one error listing every problem found.
  Result<SandboxSpec> build() const;

 private:
  SandboxSpec spec_;
  std::vector<std::filesystem::path> extra_hidden_paths_;
  std::vector<std::string> allowed_variables_;
  std::vector<std::string> problems_;
};

/// The environment every sandbox starts with (before the allowlist): PATH, HOME (the desk
/// folder), LANG, TERM=dumb and TZ (India time).
std::vector<std::string> base_environment(const std::filesystem::path& home);

}  // namespace deskd::sandbox
