#pragma once
// SandboxSpec: everything a launch needs to know about where a desk's processes live and
// what they may do — built from the desk's Confinement plus its sandbox settings.
// SandboxSpecBuilder collects every mistake and reports them together, once.

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "policy/confinement.h"
#include "policy/egress_allowlist.h"
#include "policy/egress_names.h"
#include "sandbox/desk_cgroup.h"
#include "sandbox/egress_relay.h"
#include "sandbox/host_view.h"
#include "sandbox/refusal_report.h"

namespace deskd::sandbox {

/// Told how long a sandbox took to start, from the launch's first step to its command's
/// exec (deskd's metrics), on the launching thread; it must be quick.
using SandboxStartObserver = std::function<void(std::chrono::nanoseconds took)>;

/// Whether the sandbox gets its own network (only `lo`), shares the host's, or gets its own
/// with only `lo` plus deskd's egress proxy on it, which reaches the allowed hosts only
/// (sandbox/egress_relay.h).
enum class NetworkMode { none, host, allowlist };

/// What one desk may spend through its egress proxy (network = "allowlist").
struct EgressLimits {
  std::uint64_t connections = 32;                       ///< open at once
  std::uint64_t bytes = std::uint64_t{4} << 30;         ///< both ways, since the desk started
  /// An open tunnel or forwarded request that moves no byte either way for this long is
  /// closed: a desk cannot hold its connection places (or the origin's) with silence.
  std::uint64_t idle_seconds = 300;

  bool operator==(const EgressLimits&) const = default;
};

/// The bounds SandboxSpecBuilder holds the limits to; the config reads its keys against the
/// same, so `deskd check` names a bad value before any sandbox is built.
namespace limit_bounds {
inline constexpr std::uint64_t kMinimumMemoryMebibytes = 16;
inline constexpr std::uint64_t kMinimumProcesses = 2;
inline constexpr std::uint64_t kMaximumProcesses = 4'194'304;
inline constexpr std::uint64_t kMinimumOpenFiles = 16;
inline constexpr std::uint64_t kMaximumOpenFiles = 1'048'576;
inline constexpr std::uint64_t kMinimumTmpMebibytes = 1;
inline constexpr double kMinimumCpus = 0.01;
inline constexpr double kMaximumCpus = 4096;
}  // namespace limit_bounds

/// Limits on what the sandbox may consume. Unset means "no limit beyond the defaults".
struct ResourceLimits {
  /// For the desk as a whole with a cgroup (memory.max, or v1 memory.limit_in_bytes), else
  /// RLIMIT_AS per process. Never unlimited by default: 2 GiB.
  std::optional<std::uint64_t> memory_bytes = std::uint64_t{2} << 30;
  std::uint64_t processes = 1024;             ///< cgroup pids.max, else RLIMIT_NPROC
  std::optional<double> cpus;                 ///< cgroup cpu.max in CPUs (e.g. 1.5)
  std::uint64_t file_size_bytes = std::uint64_t{4} << 30;  ///< RLIMIT_FSIZE
  std::uint64_t open_files = 1024;                         ///< RLIMIT_NOFILE
  std::uint64_t tmp_size_bytes = std::uint64_t{512} << 20;  ///< size of /tmp and /dev/shm
};

/// Host ids a root deskd's desks run as when nothing else is said: the start of the range
/// systemd's UIDS-GIDS.md leaves unused (1879048192…2147483647), far from users, system
/// users, DynamicUser ids and container ranges. Never 65534, which other services share.
inline constexpr uid_t kDefaultDeskUid = 1879048192;

/// The system folders the minimal host view shows, read-only, where the host has them.
inline constexpr const char* kShownSystemFolders[] = {"/usr", "/bin", "/sbin", "/lib", "/lib32",
                                                      "/lib64", "/libx32", "/etc", "/opt"};

/// A desk's sandbox settings as the config's [sandbox] table and the command line state
/// them: one value from the config (or the options) to the SandboxSpec, so nothing is lost
/// on the way. Unset means the default.
/// A desk's disk quota unless its config says otherwise: room for notes, memory and scratch
/// work, far below what would fill a host's disk.
inline constexpr std::uint64_t kDefaultDiskQuotaBytes = std::uint64_t{1024} << 20;

struct SandboxSettings {
  NetworkMode network = NetworkMode::none;
  /// network = "allowlist": the config's allowed_hosts (policy/egress_allowlist.h), as written.
  std::vector<std::string> allowed_hosts{};
  EgressLimits egress{};
  HostView host_view = HostView::minimal;
  std::optional<std::uint64_t> memory_bytes;
  std::optional<std::uint64_t> processes;
  std::optional<std::uint64_t> file_size_bytes;
  std::optional<std::uint64_t> open_files;
  std::optional<double> cpus;
  /// The size of each of the sandbox's /tmp and /dev/shm (ResourceLimits::tmp_size_bytes).
  std::optional<std::uint64_t> tmp_size_bytes;
  /// Host files and folders shown read-only in the minimal view, at the same paths.
  std::vector<std::filesystem::path> read_only_paths{};
  /// Names copied from deskd's environment.
  std::vector<std::string> environment_variables{};
  std::optional<std::string> hostname;
  /// A disk and inode quota on the writable places (sandbox/disk_quota.h); none only when
  /// the config says "none", since a desk without one can fill the file system it is on.
  std::optional<std::uint64_t> disk_quota_bytes = kDefaultDiskQuotaBytes;
  std::optional<std::uint64_t> inode_quota;
  /// Host ids of the desk's processes under a root deskd (default kDefaultDeskUid).
  std::optional<uid_t> uid;
  std::optional<gid_t> gid;
  /// Under an unprivileged deskd, let the desk keep deskd's supplementary groups, which it
  /// cannot drop in the desk's user namespace (supplementary_groups.h). Off: such a launch
  /// is refused.
  bool allow_supplementary_groups = false;

  bool operator==(const SandboxSettings&) const = default;
};

/// The complete, validated description of a sandbox.
struct SandboxSpec {
  /// What the desk may see and change. Its hidden paths are the only ones the mount plan
  /// masks: the file tools check the same list, so there is no second road to hide by.
  policy::Confinement confinement;
  /// Folders covered by an empty tmpfs so that no host Unix socket in them is reachable.
  std::vector<std::filesystem::path> runtime_directories{};
  /// Full view: people's homes (/home, /root and deskd's own user's home), covered by an
  /// empty tmpfs; the desk folder and read-only paths inside them are bound back.
  std::vector<std::filesystem::path> covered_homes{};
  NetworkMode network = NetworkMode::none;
  /// network = "allowlist": where each launch gets its relay to deskd's egress proxy. A
  /// launch without one fails closed. Set by whoever runs the proxy (runner/egress/).
  std::shared_ptr<EgressRelaySource> egress{};
  /// network = "allowlist": the exact allowed names, each on a loopback address of its own
  /// that the sandbox's /etc/hosts names and its forwarder listens on (policy/egress_names.h).
  std::vector<policy::EgressName> egress_names{};
  /// network = "allowlist": the allowed hosts, parsed once here, and what the desk may spend
  /// through the proxy: all deskd's egress proxy takes (runner/egress/).
  policy::EgressAllowlist allowlist{};
  EgressLimits egress_limits{};
  HostView host_view = HostView::minimal;
  /// Shown read-only in the minimal view, resolved, at the same paths as on the host.
  std::vector<std::filesystem::path> read_only_paths{};
  ResourceLimits limits{};
  /// The desk's one cgroup, shared by every copy of this spec: all the desk's sandboxes
  /// (bash, subagents' bashes, the file opener) live under it and share `limits`. A spec
  /// built anew is a desk of its own.
  std::shared_ptr<DeskCgroupSlot> desk_cgroup = std::make_shared<DeskCgroupSlot>();
  /// Where the desk's enforcers tell their refusals (refusal_report.h), shared by every copy
  /// of this spec; null: nobody is told (deskd sandbox, tests), and refused calls simply fail.
  std::shared_ptr<RefusalReporter> refusals{};
  /// Told each successful start of a sandbox of this spec; empty: nobody (deskd sandbox, tests).
  SandboxStartObserver started{};
  /// The complete environment of the sandboxed command, as NAME=value.
  std::vector<std::string> environment{};
  std::string hostname = "deskd";
  /// Host ids the sandbox's processes run as when deskd runs as root.
  uid_t root_daemon_uid = kDefaultDeskUid;
  gid_t root_daemon_gid = kDefaultDeskUid;
  /// Where the command starts: the desk folder.
  std::filesystem::path working_directory{};
  /// Under an unprivileged deskd with supplementary groups: launch anyway, the sandbox
  /// keeping them (SandboxSettings::allow_supplementary_groups).
  bool allow_supplementary_groups = false;
  /// The desk's trust bundle, a host file deskd wrote (the system's certificates and the
  /// desk's CA, runner/egress/desk_authority.h): mounted read-only over
  /// /etc/ssl/certs/ca-certificates.crt in the view, and SSL_CERT_FILE, REQUESTS_CA_BUNDLE,
  /// CURL_CA_BUNDLE and NODE_EXTRA_CA_CERTS set to that path so curl, Python (urllib,
  /// requests, httpx) and Node trust it with no options (sandbox/trust_bundle.h). Set it
  /// through the builder or, on a built spec, use_trust_bundle(): assigning it alone would
  /// change the mounts but not the variables.
  std::optional<std::filesystem::path> trust_bundle{};
};

/// Builds a SandboxSpec; setters never fail, build() reports every problem at once.
class SandboxSpecBuilder {
 public:
  explicit SandboxSpecBuilder(policy::Confinement confinement);

  /// Every setting given in `settings`; the rest keep their defaults.
  SandboxSpecBuilder& apply(const SandboxSettings& settings);
  SandboxSpecBuilder& network(NetworkMode mode);
  SandboxSpecBuilder& host_view(HostView view);
  /// Shows one more host path read-only (minimal view); it must exist.
  SandboxSpecBuilder& show_read_only(const std::filesystem::path& path);
  SandboxSpecBuilder& memory_limit(std::uint64_t bytes);
  SandboxSpecBuilder& process_limit(std::uint64_t processes);
  SandboxSpecBuilder& cpu_limit(double cpus);
  SandboxSpecBuilder& file_size_limit(std::uint64_t bytes);
  SandboxSpecBuilder& open_files_limit(std::uint64_t files);
  /// The size of each of /tmp and /dev/shm; at least kMinimumTmpMebibytes.
  SandboxSpecBuilder& tmp_size_limit(std::uint64_t bytes);
  /// Copies the daemon's variable NAME into the sandbox, if it is set.
  SandboxSpecBuilder& allow_environment_variable(const std::string& name);
  SandboxSpecBuilder& hostname(std::string name);
  /// The host uid/gid for the sandbox when deskd is root; 0 is refused.
  SandboxSpecBuilder& run_as(uid_t uid, gid_t gid);
  /// The desk's trust bundle (SandboxSpec::trust_bundle); an absolute path is required.
  SandboxSpecBuilder& trust_bundle(std::filesystem::path file);

  /// The spec, or one error listing every problem found.
  Result<SandboxSpec> build() const;

 private:
  SandboxSpec spec_;
  std::vector<std::filesystem::path> read_only_paths_;
  std::vector<std::string> allowed_variables_;
  std::vector<std::string> problems_;
};

/// The spec of a desk: its confinement with `settings`. Refuses what the builder refuses.
Result<SandboxSpec> build_sandbox_spec(const policy::Confinement& confinement, const SandboxSettings& settings);

/// [A-Za-z_][A-Za-z0-9_]*: a name the sandbox's environment allowlist accepts (and the
/// config's api_key_variable must be).
bool is_variable_name(std::string_view name);

/// The environment every sandbox starts with (before the allowlist): PATH, HOME (the desk
/// folder), LANG, TERM=dumb and TZ (India time).
std::vector<std::string> base_environment(const std::filesystem::path& home);

}  // namespace deskd::sandbox
