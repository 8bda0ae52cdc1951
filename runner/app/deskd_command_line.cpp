// deskd-full's command line: one CLI11 parser holding every command, so that each
// command's --help is written from the options it really accepts.

#include <cstdio>
#include <span>
#include <string_view>

#include "base/command_line.h"
#include "runner/app/deskd_command.h"
#include "runner/app/sandbox_command.h"
#include "sandbox/seccomp_profile.h"

#ifndef DESKD_VERSION
#define DESKD_VERSION "0"
#endif

namespace deskd::app {

std::unique_ptr<CLI::App> make_deskd_parser(std::vector<DeskdCommand>& commands) {
  auto deskd = make_command_line_parser("deskd runs AI-agent desks in kernel sandboxes.", "deskd");
  deskd->set_version_flag("--version", "deskd " DESKD_VERSION, "show the version and exit");
  deskd->require_subcommand(1, 1);
  deskd->footer("Run 'deskd COMMAND --help' for a command's own options.");
  commands.push_back(add_check_command(*deskd));
  commands.push_back(add_doctor_command(*deskd));
  commands.push_back(add_mcp_command(*deskd));
  commands.push_back(add_policy_command(*deskd));
  commands.push_back(add_run_command(*deskd));
  // `deskd sandbox` keeps the small parser it shares with the lean deskd (which runs it
  // without deskd-full); it is listed here, and run_deskd_command_line hands it its words.
  auto* sandbox = deskd->add_subcommand("sandbox", "run a command once in a desk's sandbox");
  sandbox->prefix_command();
  commands.push_back({sandbox, [] { return 2; }});
  commands.push_back(add_serve_command(*deskd));
  commands.push_back(add_shell_command(*deskd));
  return deskd;
}

int run_deskd_command_line(std::vector<std::string> arguments) {
  if (!arguments.empty() && arguments.front() == "sandbox") {
    const std::vector<std::string_view> words(arguments.begin() + 1, arguments.end());
    return run_sandbox_command(words, &sandbox::describe_seccomp_profile);
  }
  // `deskd help` has always meant `deskd --help`.
  if (arguments.size() == 1 && arguments.front() == "help") arguments.front() = "--help";
  std::vector<DeskdCommand> commands;
  auto deskd = make_deskd_parser(commands);
  if (arguments.empty()) {
    // `deskd` alone: what it can do, as bad usage.
    std::fputs(deskd->help().c_str(), stderr);
    return kUsageExitStatus;
  }
  if (auto status = parse_command_line(*deskd, std::move(arguments))) return *status;
  for (const DeskdCommand& command : commands) {
    if (command.parser->parsed()) return command.run();
  }
  std::fputs("deskd: give a command.\nRun 'deskd --help' for usage.\n", stderr);
  return kUsageExitStatus;
}

}  // namespace deskd::app
