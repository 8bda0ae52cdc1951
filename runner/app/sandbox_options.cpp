#include "runner/app/sandbox_options.h"

#include "policy/confinement.h"
#include "runner/app/cli_values.h"
#include "sandbox/desk_preparation.h"

namespace deskd::app {

const char* const kSandboxOptionsHelp =
    "  --hide PATH         hide a file or folder from the sandbox (repeatable)\n"
    "  --net none|host     no network but loopback (default), or the host's network\n"
    "  --memory SIZE       memory limit, e.g. 512M (address space without cgroups)\n"
    "  --pids N            process limit (default 1024)\n"
    "  --file-size SIZE    largest file the sandbox may write (default 4G)\n"
    "  --open-files N      open file limit (default 1024)\n"
    "  --uid N --gid N     host ids of the sandbox when deskd runs as root (default 65534)\n"
    "  --hostname NAME     hostname inside (default deskd)\n"
    "  --env NAME          copy the variable NAME from deskd's environment (repeatable)\n";

namespace {

Error usage(std::string message) { return Error::make(ErrorCode::invalid_argument, std::move(message)); }

bool is_sandbox_option(std::string_view argument) {
  for (const char* option : {"--desk", "--hide", "--env", "--hostname", "--net", "--memory", "--file-size",
                             "--pids", "--open-files", "--uid", "--gid"}) {
    if (argument == option) return true;
  }
  return false;
}

}  // namespace

Result<bool> take_sandbox_option(std::span<const std::string_view> arguments, std::size_t& index,
                                 SandboxOptions& options) {
  const std::string_view argument = arguments[index];
  if (!is_sandbox_option(argument)) return false;
  if (index + 1 >= arguments.size()) return usage(std::string(argument) + " needs a value.");
  const std::string_view value = arguments[++index];
  const std::string shown(value);

  if (argument == "--desk") options.desk_directory = std::filesystem::path(shown);
  else if (argument == "--hide") options.hidden_paths.emplace_back(std::filesystem::absolute(shown));
  else if (argument == "--env") options.environment_variables.push_back(shown);
  else if (argument == "--hostname") options.hostname = shown;
  else if (argument == "--net") {
    if (value == "none") options.network = sandbox::NetworkMode::none;
    else if (value == "host") options.network = sandbox::NetworkMode::host;
    else return usage("--net must be none or host, not '" + shown + "'.");
  } else if (argument == "--memory" || argument == "--file-size") {
    auto& into = argument == "--memory" ? options.memory_bytes : options.file_size_bytes;
    into = parse_byte_size(value);
    if (!into) return usage(std::string(argument) + " needs a size such as 512M, not '" + shown + "'.");
  } else {
    auto& into = argument == "--pids"         ? options.processes
                 : argument == "--open-files" ? options.open_files
                 : argument == "--uid"        ? options.uid
                                              : options.gid;
    into = parse_count(value);
    if (!into) return usage(std::string(argument) + " needs a number, not '" + shown + "'.");
  }
  return true;
}

Result<sandbox::SandboxSpec> build_sandbox_spec(const SandboxOptions& options) {
  std::error_code error;
  const auto desk = options.desk_directory.value_or(std::filesystem::current_path(error));
  DESKD_ASSIGN_OR_RETURN(auto confinement, policy::Confinement::create(desk, options.hidden_paths));
  sandbox::SandboxSpecBuilder builder(confinement);
  if (options.network) builder.network(*options.network);
  if (options.memory_bytes) builder.memory_limit(*options.memory_bytes);
  if (options.processes) builder.process_limit(*options.processes);
  if (options.file_size_bytes) builder.file_size_limit(*options.file_size_bytes);
  if (options.open_files) builder.open_files_limit(*options.open_files);
  if (options.uid || options.gid) {
    builder.run_as(static_cast<uid_t>(options.uid.value_or(65534)), static_cast<gid_t>(options.gid.value_or(65534)));
  }
  if (options.hostname) builder.hostname(*options.hostname);
  for (const auto& name : options.environment_variables) builder.allow_environment_variable(name);
  DESKD_ASSIGN_OR_RETURN(auto spec, builder.build());
  if (options.desk_directory) DESKD_RETURN_IF_ERROR(sandbox::prepare_desk_for_sandbox(spec));
  return spec;
}

}  // namespace deskd::app
