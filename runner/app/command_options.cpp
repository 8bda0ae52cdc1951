#include "runner/app/command_options.h"

#include <fcntl.h>

#include <array>
#include <cstdio>
#include <string_view>

namespace deskd::app {
namespace {

// Runs the lean parser's check on one option and its value; its refusal becomes CLI11's.
template <typename Options, typename Take>
void take(Options& options, Take take_option, const std::string& name, const std::string& value) {
  const std::array<std::string_view, 2> arguments{name, value};
  std::size_t index = 0;
  auto taken = take_option(std::span<const std::string_view>(arguments), index, options);
  if (!taken.ok()) throw CLI::ValidationError(taken.error().what);
}

template <typename Options, typename Take>
CLI::Option* add_checked(CLI::App& command, Options& options, Take take_option, const std::string& name,
                         const std::string& value_name, const std::string& description, bool repeatable) {
  auto* option = command.add_option_function<std::vector<std::string>>(
      name,
      [&options, take_option, name](const std::vector<std::string>& values) {
        for (const std::string& value : values) take(options, take_option, name, value);
      },
      description);
  // A repeatable option keeps every value; any other keeps the last, as it always has.
  option->type_size(1)->expected(1)->allow_extra_args(false)->type_name(value_name);
  option->multi_option_policy(repeatable ? CLI::MultiOptionPolicy::TakeAll : CLI::MultiOptionPolicy::TakeLast);
  return option;
}

Result<bool> take_sandbox(std::span<const std::string_view> arguments, std::size_t& index, SandboxOptions& options) {
  return take_sandbox_option(arguments, index, options);
}

Result<bool> take_desk_tool(std::span<const std::string_view> arguments, std::size_t& index, DeskToolOptions& options) {
  return take_desk_tool_option(arguments, index, options);
}

}  // namespace

void add_desk_option(CLI::App& command, SandboxOptions& options, const std::string& description) {
  add_checked(command, options, take_sandbox, "--desk", "DIR", description, false);
}

void add_sandbox_options(CLI::App& command, SandboxOptions& options) {
  const auto single = [&](const std::string& name, const std::string& value_name, const std::string& description) {
    add_checked(command, options, take_sandbox, name, value_name, description, false);
  };
  const auto repeatable = [&](const std::string& name, const std::string& value_name, const std::string& description) {
    add_checked(command, options, take_sandbox, name, value_name, description + " (repeatable)", true);
  };
  repeatable("--hide", "PATH", "hide a file or folder from the sandbox");
  single("--net", "none|host|allowlist",
         "no network but loopback (default), the host's network, or only the hosts --allow names, through deskd's "
         "egress proxy");
  repeatable("--allow", "PATTERN",
             "a host the allowlist network may reach: name, *.name, either with :PORT, or an address or subnet "
             "(see deskd.toml(5))");
  single("--memory", "SIZE", "memory limit, e.g. 512M (address space without cgroups)");
  single("--pids", "N", "process limit (default 1024)");
  single("--file-size", "SIZE", "largest file the sandbox may write (default 4G)");
  single("--open-files", "N", "open file limit (default 1024)");
  repeatable("--read-only", "PATH", "show a host file or folder read-only at its own path");
  single("--host-view", "minimal|full",
         "the system folders, the desk and what --read-only names (default), or the whole host read-only");
  single("--uid", "N", "host uid of the sandbox when deskd runs as root (default 2147418112; never 0 or 65534)");
  single("--gid", "N", "host gid of the sandbox when deskd runs as root (default 2147418112; never 0 or 65534)");
  single("--hostname", "NAME", "hostname inside (default deskd)");
  repeatable("--env", "NAME", "copy the variable NAME from deskd's environment");
  command.add_flag_callback(
      "--allow-supplementary-groups", [&options] { options.settings.allow_supplementary_groups = true; },
      "under an unprivileged deskd, let the sandbox keep its supplementary groups (else refused; see deskd.toml(5))");
}

void add_desk_tool_options(CLI::App& command, DeskToolOptions& options) {
  add_desk_option(command, options.sandbox,
                  "the desk folder (required); its missing writable places are created and, when deskd runs as "
                  "root, handed to the sandbox's uid");
  add_sandbox_options(command, options.sandbox);
  const auto single = [&](const std::string& name, const std::string& value_name, const std::string& description) {
    add_checked(command, options, take_desk_tool, name, value_name, description, false);
  };
  single("--timeout", "SECONDS", "how long one bash command may run (default 120)");
  single("--max-output", "CHARS", "how much of a command's output is kept (default 20000)");
  single("--proposals", "DIR",
         "where propose_file_change stores proposals, outside the desk's writable places (default: none, and the "
         "tool refuses)");
}

int usage_error(const std::string& command, const std::string& message) {
  std::fprintf(stderr, "deskd %s: %s\nRun 'deskd %s --help' for usage.\n", command.c_str(), message.c_str(), command.c_str());
  return 2;
}

UniqueFd duplicate_descriptor(int fd) { return UniqueFd(::fcntl(fd, F_DUPFD_CLOEXEC, 3)); }

}  // namespace deskd::app
