// `deskd check [--config FILE]`: loads the daemon's config as `deskd serve` would and prints
// every problem at once, like a compiler, so a config can be fixed before a restart.

#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>

#include "base/command_line.h"
#include "runner/app/deskd_command.h"
#include "runner/config/config.h"

namespace deskd::app {
namespace {

constexpr const char* kCheckDescription =
    "Reads the daemon's TOML config and checks everything it can before a desk starts:\n"
    "unknown keys, wrong types and values, missing desk folders and files, hidden paths\n"
    "that would cover a desk's own folder, and desk folders that would break confinement\n"
    "(a system folder, one shared with or nested in another desk's, one holding deskd's\n"
    "state folder or socket, one the desk's sandbox cannot reach). Prints each problem as\n"
    "FILE:LINE:COLUMN: MESSAGE.";

constexpr const char* kCheckFooter =
    "Exit status: 0 the config is fine, 2 a problem was found or the usage is wrong.";

int check(const std::string& file, bool named) {
  if (file.empty()) {
    std::fputs("deskd check: --config needs a file name.\nRun 'deskd check --help' for usage.\n", stderr);
    return kUsageExitStatus;
  }
  std::error_code error;
  if (!named && !std::filesystem::exists(file, error)) {
    std::fprintf(stderr,
                 "deskd check: no --config was given and the default config %s does not exist; give --config FILE.\n",
                 file.c_str());
    return kUsageExitStatus;
  }
  const ConfigLoad load = load_config(file);
  if (!load.config) {
    for (const auto& problem : load.problems) std::fprintf(stderr, "%s\n", problem.to_string().c_str());
    return kUsageExitStatus;
  }
  std::string names;
  for (const auto& desk : load.config->desks) names += (names.empty() ? "" : ", ") + desk.name;
  std::printf("%s: ok, %zu desk(s): %s\n", file.c_str(), load.config->desks.size(), names.c_str());
  return 0;
}

}  // namespace

DeskdCommand add_check_command(CLI::App& deskd) {
  auto* command = deskd.add_subcommand("check", "check the daemon's config file and list every problem in it");
  command->footer(std::string(kCheckDescription) + "\n\n" + kCheckFooter);
  auto file = std::make_shared<std::string>(kDefaultConfigPath);
  auto* option = add_value_once(*command, "--config", *file,
                                std::string("the config to check (default ") + kDefaultConfigPath + ")");
  option->type_name("FILE");
  return {command, [file, option] { return check(*file, option->count() > 0); }};
}

}  // namespace deskd::app
