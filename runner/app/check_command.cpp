// `deskd check --config FILE`: loads the daemon's config as `deskd serve` would and prints
// every problem at once, like a compiler, so a config can be fixed before a restart.

#include <cstdio>
#include <optional>
#include <string>

#include "runner/app/config.h"

namespace deskd::app {
namespace {

constexpr const char* kCheckUsage =
    "usage: deskd check --config FILE\n"
    "\n"
    "Reads the daemon's TOML config and checks everything it can before a desk starts:\n"
    "unknown keys, wrong types and values, missing desk folders and files, hidden paths\n"
    "that would cover a desk's own folder, and desk folders that would break confinement\n"
    "(a system folder, one shared with or nested in another desk's, one holding deskd's\n"
    "state folder or socket, one the desk's sandbox cannot reach). Prints each problem as\n"
    "FILE:LINE:COLUMN: MESSAGE.\n"
    "\n"
    "  --config FILE   the config to check\n"
    "\n"
    "Exit status: 0 the config is fine, 2 a problem was found or the usage is wrong.\n";

int usage_error(const std::string& message) {
  std::fprintf(stderr, "deskd check: %s\n\n%s", message.c_str(), kCheckUsage);
  return 2;
}

}  // namespace

int run_check_command(std::span<const std::string_view> arguments) {
  std::optional<std::string> file;
  for (std::size_t index = 0; index < arguments.size(); ++index) {
    const std::string_view argument = arguments[index];
    if (argument == "--help" || argument == "-h") {
      std::fputs(kCheckUsage, stdout);
      return 0;
    }
    if (argument == "--config") {
      if (index + 1 >= arguments.size()) return usage_error("--config needs a value.");
      if (file) return usage_error("--config is given twice.");
      file = std::string(arguments[++index]);
      continue;
    }
    if (argument.starts_with("--config=")) {
      if (file) return usage_error("--config is given twice.");
      file = std::string(argument.substr(9));
      continue;
    }
    return usage_error("unexpected argument " + std::string(argument) + ".");
  }
  if (!file) return usage_error("--config is required.");
  if (file->empty()) return usage_error("--config needs a file name.");

  const ConfigLoad load = load_config(*file);
  if (!load.config) {
    for (const auto& problem : load.problems) std::fprintf(stderr, "%s\n", problem.to_string().c_str());
    return 2;
  }
  std::string names;
  for (const auto& desk : load.config->desks) names += (names.empty() ? "" : ", ") + desk.name;
  std::printf("%s: ok, %zu desk(s): %s\n", file->c_str(), load.config->desks.size(), names.c_str());
  return 0;
}

}  // namespace deskd::app
