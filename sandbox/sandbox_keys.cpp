#include "sandbox/sandbox_keys.h"

#include <algorithm>
#include <cstdio>

#include "policy/egress_allowlist.h"

namespace deskd::sandbox {
namespace {

namespace bounds = limit_bounds;
constexpr std::uint64_t kMaximumMebibytes = std::uint64_t{1} << 40;

constexpr std::string_view kNetworks[] = {"none", "host", "allowlist"};
constexpr std::string_view kViews[] = {"minimal", "full"};

Result<void> refuse(std::string sentence) { return Error::make(ErrorCode::invalid_argument, std::move(sentence)); }

// Captureless lambdas, one per row: where each value goes is written once, here.
using Store = Result<void> (*)(SandboxSettings&, const KeyInput&);

constexpr Store kNetwork = [](SandboxSettings& s, const KeyInput& in) -> Result<void> {
  s.network = in.text == "host"        ? NetworkMode::host
              : in.text == "allowlist" ? NetworkMode::allowlist
                                       : NetworkMode::none;
  return success();
};
constexpr Store kAllowedHost = [](SandboxSettings& s, const KeyInput& in) -> Result<void> {
  if (auto pattern = policy::parse_host_pattern(in.text); !pattern.ok()) return refuse(pattern.error().what);
  s.allowed_hosts.emplace_back(in.text);
  return success();
};
constexpr Store kHostView = [](SandboxSettings& s, const KeyInput& in) -> Result<void> {
  s.host_view = in.text == "full" ? HostView::full : HostView::minimal;
  return success();
};
constexpr Store kVariable = [](SandboxSettings& s, const KeyInput& in) -> Result<void> {
  if (!is_variable_name(in.text)) return refuse("'" + std::string(in.text) + "' is not an environment variable name");
  s.environment_variables.emplace_back(in.text);
  return success();
};
constexpr Store kReadOnlyPath = [](SandboxSettings& s, const KeyInput& in) -> Result<void> {
  s.read_only_paths.emplace_back(std::string(in.text));
  return success();
};

// clang-format off: one row a setting, laid out to be read as a table.
const SandboxKey kKeys[] = {
    {.key = "network",
     .flag = "--net",
     .value_name = "none|host|allowlist",
     .value = KeyValue::choice,
     .choices = kNetworks,
     .help = "no network but loopback (default), the host's network, or only the hosts --allow names, through "
             "deskd's egress proxy (not for `deskd sandbox`, which runs no proxy)",
     .store = kNetwork},
    {.key = "allowed_hosts",
     .flag = "--allow",
     .value_name = "PATTERN",
     .value = KeyValue::list,
     .help = "a host the allowlist network may reach: name, *.name, either with :PORT, or an address or subnet "
             "(repeatable; see deskd.toml(5))",
     .store = kAllowedHost},
    {.key = "egress_connections",
     .flag = "--egress-connections",
     .value_name = "N",
     .value = KeyValue::whole,
     .minimum = 1,
     .maximum = 4096,
     .help = "connections the allowlist network may hold open at once (default 32)",
     .store = [](SandboxSettings& s, const KeyInput& in) -> Result<void> {
       s.egress.connections = in.whole;
       return success();
     }},
    {.key = "egress_mb",
     .flag = "--egress-size",
     .value_name = "SIZE",
     .value = KeyValue::mebibytes,
     .minimum = 1,
     .maximum = kMaximumMebibytes,
     .help = "bytes the allowlist network may move, both ways together (default 4G)",
     .store = [](SandboxSettings& s, const KeyInput& in) -> Result<void> {
       s.egress.bytes = in.whole;
       return success();
     }},
    {.key = "egress_idle_seconds",
     .flag = "--egress-idle",
     .value_name = "SECONDS",
     .value = KeyValue::whole,
     .minimum = 1,
     .maximum = 86'400,
     .help = "close an allowlist connection silent this long (default 300)",
     .store = [](SandboxSettings& s, const KeyInput& in) -> Result<void> {
       s.egress.idle_seconds = in.whole;
       return success();
     }},
    {.key = "memory_mb",
     .flag = "--memory",
     .value_name = "SIZE",
     .value = KeyValue::mebibytes,
     .minimum = bounds::kMinimumMemoryMebibytes,
     .maximum = kMaximumMebibytes,
     .help = "memory limit, e.g. 512M (address space without cgroups)",
     .store = [](SandboxSettings& s, const KeyInput& in) -> Result<void> {
       s.memory_bytes = in.whole;
       return success();
     }},
    {.key = "disk_quota_mb",
     .value = KeyValue::quota,
     .minimum = 8,
     .maximum = kMaximumMebibytes,
     .only_here_because = "the daemon mounts a desk's quota (sandbox/disk_quota.h); the ad-hoc commands give none"},
    {.key = "inode_quota",
     .value = KeyValue::whole,
     .minimum = 64,
     .maximum = std::uint64_t{1} << 32,
     .store = [](SandboxSettings& s, const KeyInput& in) -> Result<void> {
       s.inode_quota = in.whole;
       return success();
     },
     .only_here_because = "part of the daemon's disk quota, as disk_quota_mb"},
    {.key = "processes",
     .flag = "--pids",
     .value_name = "N",
     .value = KeyValue::whole,
     .minimum = bounds::kMinimumProcesses,
     .maximum = bounds::kMaximumProcesses,
     .help = "process limit (default 1024)",
     .store = [](SandboxSettings& s, const KeyInput& in) -> Result<void> {
       s.processes = in.whole;
       return success();
     }},
    {.key = "file_size_mb",
     .flag = "--file-size",
     .value_name = "SIZE",
     .value = KeyValue::mebibytes,
     .minimum = 1,
     .maximum = kMaximumMebibytes,
     .help = "largest file the sandbox may write (default 4G)",
     .store = [](SandboxSettings& s, const KeyInput& in) -> Result<void> {
       s.file_size_bytes = in.whole;
       return success();
     }},
    {.key = "open_files",
     .flag = "--open-files",
     .value_name = "N",
     .value = KeyValue::whole,
     .minimum = bounds::kMinimumOpenFiles,
     .maximum = bounds::kMaximumOpenFiles,
     .help = "open file limit (default 1024)",
     .store = [](SandboxSettings& s, const KeyInput& in) -> Result<void> {
       s.open_files = in.whole;
       return success();
     }},
    {.key = "cpus",
     .flag = "--cpus",
     .value_name = "N",
     .value = KeyValue::cpus,
     .help = "CPU time the desk may use, in CPUs, e.g. 1.5 (with cgroups; default no limit)",
     .store = [](SandboxSettings& s, const KeyInput& in) -> Result<void> {
       s.cpus = in.number;
       return success();
     }},
    {.key = "tmp_mb",
     .flag = "--tmp-size",
     .value_name = "SIZE",
     .value = KeyValue::mebibytes,
     .minimum = bounds::kMinimumTmpMebibytes,
     .maximum = kMaximumMebibytes,
     .help = "the size of each of the sandbox's /tmp and /dev/shm (default 512M; without cgroups at most half "
             "the memory limit)",
     .store = [](SandboxSettings& s, const KeyInput& in) -> Result<void> {
       s.tmp_size_bytes = in.whole;
       return success();
     }},
    {.key = "hidden_paths",
     .flag = "--hide",
     .value_name = "PATH",
     .value = KeyValue::paths,
     .help = "hide a file or folder from the sandbox (repeatable)"},
    {.key = "read_only_paths",
     .flag = "--read-only",
     .value_name = "PATH",
     .value = KeyValue::paths,
     .help = "show a host file or folder read-only at its own path (repeatable)",
     .store = kReadOnlyPath},
    {.key = "host_view",
     .flag = "--host-view",
     .value_name = "minimal|full",
     .value = KeyValue::choice,
     .choices = kViews,
     .help = "the system folders, the desk and what --read-only names (default), or the whole host read-only",
     .store = kHostView},
    {.key = "allow_supplementary_groups",
     .flag = "--allow-supplementary-groups",
     .value = KeyValue::flag,
     .help = "under an unprivileged deskd, let the sandbox keep its supplementary groups (else refused; see "
             "deskd.toml(5))",
     .store = [](SandboxSettings& s, const KeyInput&) -> Result<void> {
       s.allow_supplementary_groups = true;
       return success();
     }},
    {.key = "environment",
     .flag = "--env",
     .value_name = "NAME",
     .value = KeyValue::list,
     .help = "copy the variable NAME from deskd's environment (repeatable)",
     .store = kVariable},
    {.flag = "--hostname",
     .value_name = "NAME",
     .value = KeyValue::text,
     .help = "hostname inside (default deskd)",
     .store = [](SandboxSettings& s, const KeyInput& in) -> Result<void> {
       s.hostname = std::string(in.text);
       return success();
     },
     .only_here_because = "a served desk's hostname is its [[desk]] table's 'hostname', one per desk"},
    {.flag = "--uid",
     .value_name = "ID",
     .value = KeyValue::whole,
     .maximum = 4'294'967'294,
     .help = "the sandbox's host uid under a root deskd (default 2147418112; never 0 or 65534)",
     .store = [](SandboxSettings& s, const KeyInput& in) -> Result<void> {
       s.uid = static_cast<uid_t>(in.whole);
       return success();
     },
     .only_here_because = "the daemon chooses each served desk's ids (desk_uid_first, desk_uid_count)"},
    {.flag = "--gid",
     .value_name = "ID",
     .value = KeyValue::whole,
     .maximum = 4'294'967'294,
     .help = "the sandbox's host gid under a root deskd (default 2147418112; never 0 or 65534)",
     .store = [](SandboxSettings& s, const KeyInput& in) -> Result<void> {
       s.gid = static_cast<gid_t>(in.whole);
       return success();
     },
     .only_here_because = "as --uid"},
};
// clang-format on

}  // namespace

std::span<const SandboxKey> sandbox_keys() { return kKeys; }

const SandboxKey* find_sandbox_key(std::string_view key) {
  const auto* row = std::find_if(std::begin(kKeys), std::end(kKeys),
                                 [&](const SandboxKey& candidate) { return !key.empty() && candidate.key == key; });
  return row == std::end(kKeys) ? nullptr : row;
}

const SandboxKey* find_sandbox_flag(std::string_view flag) {
  const auto* row = std::find_if(std::begin(kKeys), std::end(kKeys),
                                 [&](const SandboxKey& candidate) { return !flag.empty() && candidate.flag == flag; });
  return row == std::end(kKeys) ? nullptr : row;
}

std::string key_bounds(const SandboxKey& row) {
  if (row.value == KeyValue::cpus) {
    char text[64];
    std::snprintf(text, sizeof text, "%g to %g", bounds::kMinimumCpus, bounds::kMaximumCpus);
    return text;
  }
  return std::to_string(row.minimum) + " to " + std::to_string(row.maximum);
}

std::string sandbox_flags_help() {
  // Two columns as CLI11 writes them: the flag and its value, then the help, wrapped.
  constexpr std::size_t kColumn = 22;
  constexpr std::size_t kWidth = 88;
  std::string text;
  for (const SandboxKey& row : kKeys) {
    if (row.flag.empty()) continue;
    std::string line = "  " + std::string(row.flag) + (row.value_name.empty() ? "" : " " + std::string(row.value_name));
    line += line.size() + 2 <= kColumn ? std::string(kColumn - line.size(), ' ') : "  ";
    std::size_t position = 0;
    const std::string_view help = row.help;
    while (position < help.size()) {
      const std::size_t room = kWidth > line.size() ? kWidth - line.size() : 20;
      std::size_t end = std::min(help.size(), position + room);
      if (end < help.size()) {
        const std::size_t space = help.rfind(' ', end);
        if (space != std::string_view::npos && space > position) end = space;
      }
      text += line + std::string(help.substr(position, end - position)) + "\n";
      position = end < help.size() && help[end] == ' ' ? end + 1 : end;
      line = std::string(kColumn, ' ');
    }
  }
  return text;
}

}  // namespace deskd::sandbox
