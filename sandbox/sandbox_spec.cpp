#include "sandbox/sandbox_spec.h"

#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>

#include "policy/egress_allowlist.h"
#include "policy/path_resolution.h"
#include "sandbox/trust_bundle.h"

namespace deskd::sandbox {

bool is_variable_name(std::string_view name) {
  if (name.empty() || (name[0] >= '0' && name[0] <= '9')) return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return c == '_' || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
  });
}

namespace {

bool valid_hostname(const std::string& name) {
  if (name.empty() || name.size() > 64) return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return c == '-' || c == '.' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
           (c >= '0' && c <= '9');
  });
}

// Built with append: GCC 12 at -O3 reports a false -Wrestrict for "'" + std::string&&.
std::string single_quoted(const std::string& text) {
  std::string result(1, '\'');
  result.append(policy::printable_path(text));
  result.push_back('\'');
  return result;
}

bool is_folder(const std::filesystem::path& path) {
  struct stat status {};
  return ::stat(path.c_str(), &status) == 0 && S_ISDIR(status.st_mode);
}

// /run and /var/run hold the host's Unix sockets (D-Bus, systemd, Docker, ...); a read-only
// view would still let a process connect() to them, so they are covered entirely.
std::vector<std::filesystem::path> runtime_directories() {
  std::vector<std::filesystem::path> folders;
  std::vector<std::string> candidates = {"/run", "/var/run"};
  if (const char* runtime = std::getenv("XDG_RUNTIME_DIR"); runtime != nullptr && *runtime == '/') {
    candidates.emplace_back(runtime);
  }
  for (const auto& candidate : candidates) {
    auto resolved = policy::resolve_path(candidate, "/");
    if (!resolved.ok() || !is_folder(*resolved)) continue;
    const bool covered = std::any_of(folders.begin(), folders.end(), [&](const auto& folder) {
      return policy::is_same_or_inside(*resolved, folder);
    });
    if (!covered) folders.push_back(std::move(resolved).value());
  }
  return folders;
}

// The full view shows the whole host but not its people's homes: /home, /root, and the home
// of the user deskd runs as (its passwd entry and its $HOME), which under an unprivileged
// deskd is often neither and holds its keys (~/.ssh). Not covered: a home that is or holds a
// system folder the tools need ("/" for many system users), nor one inside a folder the
// sandbox replaces anyway (/tmp, /dev, /proc, /sys, the runtime folders), where the view
// would have no mount point for the cover.
std::vector<std::filesystem::path> home_folders(const std::vector<std::filesystem::path>& runtime_folders) {
  std::vector<std::string> candidates = {"/home", "/root"};
  // getpwuid_r: deskd may have threads; a missing entry (an unnamed uid) is simply no home.
  std::string buffer(16384, '\0');
  passwd entry{};
  passwd* found = nullptr;
  if (::getpwuid_r(::geteuid(), &entry, buffer.data(), buffer.size(), &found) == 0 && found != nullptr &&
      found->pw_dir != nullptr) {
    candidates.emplace_back(found->pw_dir);
  }
  if (const char* home = std::getenv("HOME"); home != nullptr) candidates.emplace_back(home);

  std::vector<std::filesystem::path> homes;
  for (const auto& candidate : candidates) {
    if (candidate.empty() || candidate.front() != '/') continue;
    auto resolved = policy::resolve_path(candidate, "/");
    if (!resolved.ok() || !is_folder(*resolved)) continue;
    const auto& home = *resolved;
    const bool holds_system_folder =
        std::any_of(std::begin(kShownSystemFolders), std::end(kShownSystemFolders),
                    [&](const char* system) { return policy::is_same_or_inside(system, home); });
    constexpr const char* kReplacedFolders[] = {"/tmp", "/dev", "/proc", "/sys"};
    const bool replaced_anyway =
        std::any_of(std::begin(kReplacedFolders), std::end(kReplacedFolders),
                    [&](const char* folder) { return policy::is_same_or_inside(home, folder); }) ||
        std::any_of(runtime_folders.begin(), runtime_folders.end(),
                    [&](const auto& folder) { return policy::is_same_or_inside(home, folder); });
    if (holds_system_folder || replaced_anyway) continue;
    if (std::any_of(homes.begin(), homes.end(),
                    [&](const auto& other) { return policy::is_same_or_inside(home, other); })) {
      continue;
    }
    std::erase_if(homes, [&](const auto& other) { return policy::is_same_or_inside(other, home); });
    homes.push_back(home);
  }
  return homes;
}

}  // namespace

std::vector<std::string> base_environment(const std::filesystem::path& home) {
  return {
      "PATH=/usr/local/bin:/usr/bin:/bin:/usr/local/sbin:/usr/sbin:/sbin",
      "HOME=" + home.native(),
      "LANG=C.UTF-8",
      "TERM=dumb",
      "TZ=Asia/Kolkata",
  };
}

SandboxSpecBuilder::SandboxSpecBuilder(policy::Confinement confinement)
    : spec_{.confinement = confinement, .working_directory = confinement.desk_directory()} {}

SandboxSpecBuilder& SandboxSpecBuilder::apply(const SandboxSettings& settings) {
  network(settings.network);
  if (settings.network == NetworkMode::allowlist) {
    // The exact names the desk reaches without proxy variables (policy/egress_names.h),
    // declared here once: the sandbox's /etc/hosts, its forwarder and deskd's proxy
    // (attach_egress_proxy) all take them from the spec.
    auto allowlist = policy::EgressAllowlist::parse(settings.allowed_hosts);
    if (allowlist.ok()) {
      spec_.egress_names = policy::egress_names(*allowlist);
      spec_.allowlist = std::move(allowlist).value();
    } else {
      problems_.push_back("allowed_hosts: " + allowlist.error().what);
    }
    spec_.egress_limits = settings.egress;
  }
  host_view(settings.host_view);
  if (settings.memory_bytes) memory_limit(*settings.memory_bytes);
  if (settings.processes) process_limit(*settings.processes);
  if (settings.file_size_bytes) file_size_limit(*settings.file_size_bytes);
  if (settings.open_files) open_files_limit(*settings.open_files);
  if (settings.cpus) cpu_limit(*settings.cpus);
  if (settings.tmp_size_bytes) tmp_size_limit(*settings.tmp_size_bytes);
  for (const auto& path : settings.read_only_paths) show_read_only(path);
  for (const auto& name : settings.environment_variables) allow_environment_variable(name);
  if (settings.hostname) hostname(*settings.hostname);
  spec_.allow_supplementary_groups = settings.allow_supplementary_groups;
  if (settings.uid || settings.gid) run_as(settings.uid.value_or(kDefaultDeskUid), settings.gid.value_or(kDefaultDeskUid));
  return *this;
}

Result<SandboxSpec> build_sandbox_spec(const policy::Confinement& confinement, const SandboxSettings& settings) {
  return SandboxSpecBuilder(confinement).apply(settings).build();
}

SandboxSpecBuilder& SandboxSpecBuilder::host_view(HostView view) {
  spec_.host_view = view;
  return *this;
}

SandboxSpecBuilder& SandboxSpecBuilder::show_read_only(const std::filesystem::path& path) {
  read_only_paths_.push_back(path);
  return *this;
}

SandboxSpecBuilder& SandboxSpecBuilder::network(NetworkMode mode) {
  spec_.network = mode;
  return *this;
}

SandboxSpecBuilder& SandboxSpecBuilder::memory_limit(std::uint64_t bytes) {
  if (bytes < (limit_bounds::kMinimumMemoryMebibytes << 20)) {
    problems_.push_back("the memory limit must be at least " + std::to_string(limit_bounds::kMinimumMemoryMebibytes) +
                        "M");
  }
  spec_.limits.memory_bytes = bytes;
  return *this;
}

SandboxSpecBuilder& SandboxSpecBuilder::process_limit(std::uint64_t processes) {
  if (processes < limit_bounds::kMinimumProcesses || processes > limit_bounds::kMaximumProcesses) {
    problems_.push_back("the process limit must be between " + std::to_string(limit_bounds::kMinimumProcesses) +
                        " and " + std::to_string(limit_bounds::kMaximumProcesses));
  }
  spec_.limits.processes = processes;
  return *this;
}

SandboxSpecBuilder& SandboxSpecBuilder::tmp_size_limit(std::uint64_t bytes) {
  if (bytes < (limit_bounds::kMinimumTmpMebibytes << 20)) {
    problems_.push_back("the size of /tmp must be at least " + std::to_string(limit_bounds::kMinimumTmpMebibytes) +
                        "M");
  }
  spec_.limits.tmp_size_bytes = bytes;
  return *this;
}

SandboxSpecBuilder& SandboxSpecBuilder::cpu_limit(double cpus) {
  if (!(cpus >= limit_bounds::kMinimumCpus && cpus <= limit_bounds::kMaximumCpus)) {
    problems_.push_back("the CPU limit must be between 0.01 and 4096");
  }
  spec_.limits.cpus = cpus;
  return *this;
}

SandboxSpecBuilder& SandboxSpecBuilder::file_size_limit(std::uint64_t bytes) {
  if (bytes == 0) problems_.push_back("the file size limit must be more than 0");
  spec_.limits.file_size_bytes = bytes;
  return *this;
}

SandboxSpecBuilder& SandboxSpecBuilder::open_files_limit(std::uint64_t files) {
  if (files < limit_bounds::kMinimumOpenFiles || files > limit_bounds::kMaximumOpenFiles) {
    problems_.push_back("the open files limit must be between " + std::to_string(limit_bounds::kMinimumOpenFiles) +
                        " and " + std::to_string(limit_bounds::kMaximumOpenFiles));
  }
  spec_.limits.open_files = files;
  return *this;
}

SandboxSpecBuilder& SandboxSpecBuilder::allow_environment_variable(const std::string& name) {
  if (!is_variable_name(name)) {
    problems_.push_back(single_quoted(name) + " is not an environment variable name");
  }
  allowed_variables_.push_back(name);
  return *this;
}

SandboxSpecBuilder& SandboxSpecBuilder::hostname(std::string name) {
  if (!valid_hostname(name)) {
    problems_.push_back(single_quoted(name) + " is not a hostname (letters, digits, '-' and '.', at most 64)");
  }
  spec_.hostname = std::move(name);
  return *this;
}

SandboxSpecBuilder& SandboxSpecBuilder::run_as(uid_t uid, gid_t gid) {
  if (uid == 0 || gid == 0) problems_.push_back("the sandbox may not run as uid or gid 0");
  // 65534 is nobody: other host services share it, and could then rewrite the desk's memory.
  if (uid == 65534 || gid == 65534) problems_.push_back("the sandbox may not run as nobody (65534), which other services share");
  spec_.root_daemon_uid = uid;
  spec_.root_daemon_gid = gid;
  return *this;
}

SandboxSpecBuilder& SandboxSpecBuilder::trust_bundle(std::filesystem::path file) {
  if (!file.is_absolute()) {
    problems_.push_back("the trust bundle " + policy::printable_path(file.native()) + " is not an absolute path");
  }
  spec_.trust_bundle = std::move(file);
  return *this;
}

Result<SandboxSpec> SandboxSpecBuilder::build() const {
  std::vector<std::string> problems = problems_;
  SandboxSpec spec = spec_;
  const auto& desk = spec.confinement.desk_directory();
  for (const auto& shown : read_only_paths_) {
    auto resolved = policy::resolve_path(shown.native(), desk);
    struct stat status {};
    if (!resolved.ok() || ::stat(resolved->c_str(), &status) != 0) {
      problems.push_back("the read-only path " + policy::printable_path(shown.native()) + " does not exist");
      continue;
    }
    if (*resolved == "/") {
      problems.push_back("the read-only path " + policy::printable_path(shown.native()) +
                         " is the host's root; use host_view = \"full\" for the whole host");
      continue;
    }
    if (std::find(spec.read_only_paths.begin(), spec.read_only_paths.end(), *resolved) == spec.read_only_paths.end()) {
      spec.read_only_paths.push_back(std::move(resolved).value());
    }
  }
  if (spec.host_view == HostView::full) {
    spec.runtime_directories = runtime_directories();
    spec.covered_homes = home_folders(spec.runtime_directories);
  }
  for (const auto& folder : spec.runtime_directories) {
    if (policy::is_same_or_inside(desk, folder)) {
      problems.push_back("the desk folder " + desk.native() + " lies inside " + folder.native() +
                         ", which the sandbox covers to hide the host's sockets");
    }
  }
  spec.environment = base_environment(desk);
  for (const auto& name : allowed_variables_) {
    const char* value = std::getenv(name.c_str());
    if (value == nullptr) continue;
    const std::string prefix = name + "=";
    std::erase_if(spec.environment, [&](const std::string& entry) { return entry.rfind(prefix, 0) == 0; });
    spec.environment.push_back(prefix + value);
  }
  if (spec.network == NetworkMode::allowlist) {
    // The desk's way out is its proxy, whatever deskd's own environment said.
    std::erase_if(spec.environment, is_proxy_variable);
    for (auto& entry : egress_proxy_environment()) spec.environment.push_back(std::move(entry));
  }
  // Last, like the proxy: the desk trusts its bundle, whatever deskd's environment said.
  if (spec.trust_bundle) use_trust_bundle(spec, *spec.trust_bundle);
  if (!problems.empty()) {
    std::string what = "The sandbox settings are not valid: ";
    for (std::size_t index = 0; index < problems.size(); ++index) {
      if (index > 0) what += "; ";
      what += problems[index];
    }
    return Error::make(ErrorCode::invalid_argument, what + ".");
  }
  return spec;
}

}  // namespace deskd::sandbox
