#include "runner/app/policy_command.h"

#include <cstdio>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "policy/path_policy.h"

namespace deskd::app {

const char* const kPolicyUsage =
    "usage: deskd policy --desk DIR [--hide PATH]... read|write PATH\n"
    "\n"
    "Answers as a desk's file tools would: whether PATH may be read or written, and the\n"
    "resolved path. A relative PATH starts at the desk folder; a relative --hide path starts\n"
    "at the current folder.\n"
    "\n"
    "  --desk DIR    the desk's folder (must exist)\n"
    "  --hide PATH   a secret file or folder the desk may not read (repeatable)\n"
    "\n"
    "Exit status: 0 allowed, 1 refused, 2 bad usage or a confinement that cannot be built.\n";

namespace {

int usage_error(const std::string& message) {
  std::fprintf(stderr, "deskd policy: %s\n\n%s", message.c_str(), kPolicyUsage);
  return 2;
}

}  // namespace

int run_policy_command(std::span<const std::string_view> arguments) {
  std::optional<std::filesystem::path> desk_directory;
  std::vector<std::filesystem::path> hidden_paths;
  std::vector<std::string_view> positional;

  for (std::size_t index = 0; index < arguments.size(); ++index) {
    const std::string_view argument = arguments[index];
    const bool has_value = index + 1 < arguments.size();
    if (argument == "--help" || argument == "-h") {
      std::fputs(kPolicyUsage, stdout);
      return 0;
    }
    if (argument == "--desk" || argument == "--hide") {
      if (!has_value) return usage_error(std::string(argument) + " needs a value.");
      const std::filesystem::path value{std::string(arguments[++index])};
      if (argument == "--desk") {
        desk_directory = value;
      } else {
        std::error_code error;
        hidden_paths.push_back(value.is_absolute() ? value : std::filesystem::absolute(value, error));
      }
      continue;
    }
    if (argument.starts_with("--")) return usage_error("unknown option " + std::string(argument) + ".");
    positional.push_back(argument);
  }
  if (!desk_directory) return usage_error("--desk is required.");
  if (positional.size() != 2) return usage_error("give exactly one of read|write and one PATH.");
  const std::string_view action = positional[0];
  if (action != "read" && action != "write") {
    return usage_error("the action must be read or write, not " + std::string(action) + ".");
  }

  auto policy = policy::PathPolicy::create(*desk_directory, hidden_paths);
  if (!policy.ok()) {
    std::fprintf(stderr, "deskd policy: %s\n", policy.error().what.c_str());
    return 2;
  }
  const auto answer = action == "read" ? policy->readable(positional[1]) : policy->writable(positional[1]);
  if (!answer.ok()) {
    std::printf("refused: %s\n", answer.error().what.c_str());
    return 1;
  }
  std::printf("allowed: %s\n", answer->c_str());
  return 0;
}

}  // namespace deskd::app
