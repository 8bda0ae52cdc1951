#pragma once
// What deskd's and deskctl's command lines share: parsing with CLI11 (whose parser writes
// the --help text, so the help cannot drift from what is accepted) and the house's answers
// to bad usage — one sentence on stderr naming what was wrong, a pointer to --help, exit
// status 2.

#include <CLI/CLI.hpp>

#include <optional>
#include <string>
#include <vector>

namespace deskd {

/// The exit status of bad usage, for every command of deskd and deskctl.
inline constexpr int kUsageExitStatus = 2;

/// A parser named `program` with the house's help layout and options that may be given
/// after positional arguments.
std::unique_ptr<CLI::App> make_command_line_parser(const std::string& description, const std::string& program);

/// Parses `arguments` (without the program's name) with `parser`. Returns nothing when the
/// parse succeeded and the command should run; otherwise the exit status, having printed
/// the help (0, on stdout) or the error ("PROGRAM COMMAND: WHAT.", then "Run 'PROGRAM
/// COMMAND --help' for usage.", on stderr; 2).
std::optional<int> parse_command_line(CLI::App& parser, std::vector<std::string> arguments);

/// The deepest subcommand of `parser` that was named on its command line (or `parser`).
CLI::App& chosen_command(CLI::App& parser);

/// "deskd run": the program and subcommand names down to `command`.
std::string command_path(const CLI::App& command);

/// An option taking one value into `into` that refuses being given twice ("--config is
/// given twice.").
CLI::Option* add_value_once(CLI::App& command, const std::string& name, std::string& into,
                            const std::string& description);

}  // namespace deskd
