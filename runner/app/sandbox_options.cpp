#include "runner/app/sandbox_options.h"

#include <unistd.h>

#include "policy/confinement.h"
#include "policy/egress_allowlist.h"
#include "runner/app/cli_values.h"
#include "sandbox/desk_preparation.h"
#include "sandbox/uid_registry.h"

namespace deskd::app {

const char* const kSandboxOptionsHelp =
    "  --hide PATH         hide a file or folder from the sandbox (repeatable)\n"
    "  --net none|host|allowlist  no network but loopback (default), the host's network, or\n"
    "                      only the hosts --allow names, through deskd's egress proxy (not\n"
    "                      for `deskd sandbox`, which runs no proxy)\n"
    "  --allow PATTERN     a host the allowlist network may reach: name, *.name, either with\n"
    "                      :PORT, or an address or subnet (repeatable; see deskd.toml(5))\n"
    "  --memory SIZE       memory limit, e.g. 512M (address space without cgroups)\n"
    "  --pids N            process limit (default 1024)\n"
    "  --file-size SIZE    largest file the sandbox may write (default 4G)\n"
    "  --open-files N      open file limit (default 1024)\n"
    "  --read-only PATH    show a host file or folder read-only at its own path (repeatable)\n"
    "  --host-view minimal|full  the system folders, the desk and what --read-only names\n"
    "                      (default), or the whole host read-only\n"
    "  --uid N --gid N     host ids of the sandbox when deskd runs as root (default 2147418112;\n"
    "                      never 0 or 65534)\n"
    "  --hostname NAME     hostname inside (default deskd)\n"
    "  --env NAME          copy the variable NAME from deskd's environment (repeatable)\n"
    "  --allow-supplementary-groups  under an unprivileged deskd, let the sandbox keep its\n"
    "                      supplementary groups (else refused; see deskd.toml(5))\n";

namespace {

Error usage(std::string message) { return Error::make(ErrorCode::invalid_argument, std::move(message)); }

bool is_sandbox_option(std::string_view argument) {
  for (const char* option : {"--desk", "--hide", "--env", "--hostname", "--net", "--allow", "--memory", "--file-size",
                             "--pids", "--open-files", "--uid", "--gid", "--read-only", "--host-view"}) {
    if (argument == option) return true;
  }
  return false;
}

}  // namespace

Result<bool> take_sandbox_option(std::span<const std::string_view> arguments, std::size_t& index,
                                 SandboxOptions& options) {
  const std::string_view argument = arguments[index];
  if (argument == "--allow-supplementary-groups") {
    options.settings.allow_supplementary_groups = true;
    return true;
  }
  if (!is_sandbox_option(argument)) return false;
  if (index + 1 >= arguments.size()) return usage(std::string(argument) + " needs a value.");
  const std::string_view value = arguments[++index];
  const std::string shown(value);

  sandbox::SandboxSettings& settings = options.settings;
  if (argument == "--desk") options.desk_directory = std::filesystem::path(shown);
  else if (argument == "--hide") options.hidden_paths.emplace_back(std::filesystem::absolute(shown));
  else if (argument == "--read-only") settings.read_only_paths.emplace_back(std::filesystem::absolute(shown));
  else if (argument == "--env") settings.environment_variables.push_back(shown);
  else if (argument == "--hostname") settings.hostname = shown;
  else if (argument == "--net") {
    if (value == "none") settings.network = sandbox::NetworkMode::none;
    else if (value == "host") settings.network = sandbox::NetworkMode::host;
    else if (value == "allowlist") settings.network = sandbox::NetworkMode::allowlist;
    else return usage("--net must be none, host or allowlist, not '" + shown + "'.");
  } else if (argument == "--allow") {
    if (auto pattern = policy::parse_host_pattern(value); !pattern.ok()) return usage("--allow: " + pattern.error().what + ".");
    settings.allowed_hosts.push_back(shown);
  } else if (argument == "--host-view") {
    if (value == "minimal") settings.host_view = sandbox::HostView::minimal;
    else if (value == "full") settings.host_view = sandbox::HostView::full;
    else return usage("--host-view must be minimal or full, not '" + shown + "'.");
  } else if (argument == "--memory" || argument == "--file-size") {
    auto& into = argument == "--memory" ? settings.memory_bytes : settings.file_size_bytes;
    into = parse_byte_size(value);
    if (!into) return usage(std::string(argument) + " needs a size such as 512M, not '" + shown + "'.");
  } else if (argument == "--uid" || argument == "--gid") {
    const auto id = parse_count(value);
    if (!id || *id > 4294967294U) return usage(std::string(argument) + " needs a host id, not '" + shown + "'.");
    if (argument == "--uid") settings.uid = static_cast<uid_t>(*id);
    else settings.gid = static_cast<gid_t>(*id);
  } else {
    auto& into = argument == "--pids" ? settings.processes : settings.open_files;
    into = parse_count(value);
    if (!into) return usage(std::string(argument) + " needs a number, not '" + shown + "'.");
  }
  return true;
}

Result<void> check_sandbox_options(const SandboxOptions& options) {
  const sandbox::NetworkMode network = options.settings.network;
  if (!options.settings.allowed_hosts.empty() && network != sandbox::NetworkMode::allowlist) {
    const std::string named = network == sandbox::NetworkMode::host ? "--net host" : "no network (--net none)";
    return usage("--allow limits a sandbox only under --net allowlist, and this one has " + named +
                 ", so the list would be ignored; add --net allowlist to limit it to these hosts, or leave out --allow.");
  }
  return success();
}

Result<sandbox::SandboxSpec> build_sandbox_spec(const SandboxOptions& options) {
  DESKD_RETURN_IF_ERROR(check_sandbox_options(options));
  std::error_code error;
  const auto folder = options.desk_directory ? *options.desk_directory : std::filesystem::current_path(error);
  sandbox::SandboxSettings settings = options.settings;
  if (::geteuid() == 0) {
    // A root ad-hoc command never runs as a served desk's uid, nor on a served desk's
    // folder: it would hand that desk's places to another uid (or its own to the desk).
    const auto resolved = std::filesystem::weakly_canonical(folder, error);
    DESKD_RETURN_IF_ERROR(sandbox::refuse_served_desk_folder(error ? folder : resolved));
    if (!settings.uid && !settings.gid) {
      settings.uid = sandbox::kAdHocDeskUid;
      settings.gid = sandbox::kAdHocDeskUid;
    }
  }
  if (options.desk_directory) return sandbox::build_desk_sandbox_spec(folder, options.hidden_paths, settings);
  DESKD_ASSIGN_OR_RETURN(auto confinement, policy::Confinement::create(folder, options.hidden_paths));
  return sandbox::build_sandbox_spec(confinement, settings);
}

}  // namespace deskd::app
