#pragma once
// What every command of deskd-full is: its CLI11 parser, a subcommand of `deskd` (which
// writes its --help from the options it accepts), and what runs once it has parsed.

#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace CLI {
class App;
}  // namespace CLI

namespace deskd::app {

/// Where `deskd check`, `doctor` (and the packaged service's `serve`) find the config
/// when no --config is given.
inline constexpr const char* kDefaultConfigPath = "/etc/deskd/deskd.toml";

struct DeskdCommand {
  CLI::App* parser = nullptr;
  /// Runs the command with what was parsed; returns its exit status.
  std::function<int()> run;
};

/// Each adds its command to `deskd`'s parser; the options it parses live as long as the
/// returned `run`.
DeskdCommand add_check_command(CLI::App& deskd);
DeskdCommand add_doctor_command(CLI::App& deskd);
DeskdCommand add_mcp_command(CLI::App& deskd);
DeskdCommand add_policy_command(CLI::App& deskd);
DeskdCommand add_run_command(CLI::App& deskd);
DeskdCommand add_serve_command(CLI::App& deskd);
DeskdCommand add_shell_command(CLI::App& deskd);

/// deskd-full's whole parser: every command above and `sandbox` (parsed by its own small
/// parser, shared with the lean deskd), with `commands` filled in the order of the help.
std::unique_ptr<CLI::App> make_deskd_parser(std::vector<DeskdCommand>& commands);

/// Runs deskd-full with `arguments` (argv without the program's name) and returns the exit
/// status: a command's own, 0 for --help and --version, 2 for bad usage.
int run_deskd_command_line(std::vector<std::string> arguments);

}  // namespace deskd::app
