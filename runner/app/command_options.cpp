#include "runner/app/command_options.h"

#include <fcntl.h>

#include <array>
#include <cstdio>
#include <string_view>

#include "sandbox/sandbox_keys.h"

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

// A flag without a value: the lean parser is given it alone.
Result<bool> take_sandbox_flag(std::span<const std::string_view> arguments, std::size_t& index,
                               SandboxOptions& options) {
  return take_sandbox_option(arguments.first(1), index, options);
}

Result<bool> take_desk_tool(std::span<const std::string_view> arguments, std::size_t& index, DeskToolOptions& options) {
  return take_desk_tool_option(arguments, index, options);
}

}  // namespace

void add_desk_option(CLI::App& command, SandboxOptions& options, const std::string& description) {
  add_checked(command, options, take_sandbox, "--desk", "DIR", description, false);
}

void add_sandbox_options(CLI::App& command, SandboxOptions& options) {
  // The rows of sandbox/sandbox_keys.h that have a flag, each checked by the lean parser.
  for (const sandbox::SandboxKey& row : sandbox::sandbox_keys()) {
    if (row.flag.empty()) continue;
    const std::string flag(row.flag);
    if (row.value == sandbox::KeyValue::flag) {
      command.add_flag_callback(
          flag, [&options, flag] { take(options, take_sandbox_flag, flag, ""); }, std::string(row.help));
      continue;
    }
    const bool repeatable = row.value == sandbox::KeyValue::list || row.value == sandbox::KeyValue::paths;
    add_checked(command, options, take_sandbox, flag, std::string(row.value_name), std::string(row.help), repeatable);
  }
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
