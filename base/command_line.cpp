#include "base/command_line.h"

#include <algorithm>
#include <cstdio>

namespace deskd {

std::unique_ptr<CLI::App> make_command_line_parser(const std::string& description, const std::string& program) {
  auto parser = std::make_unique<CLI::App>(description, program);
  parser->get_formatter()->column_width(28);
  parser->get_formatter()->label("REQUIRED", "(required)");
  parser->get_formatter()->label("Usage", "usage");
  parser->set_help_flag("-h,--help", "show this help and exit");
  // Options of a command may follow its arguments, and a program's own options (deskctl
  // --json) may follow the command.
  parser->fallthrough();
  return parser;
}

CLI::App& chosen_command(CLI::App& parser) {
  CLI::App* command = &parser;
  for (;;) {
    const auto chosen = command->get_subcommands();
    if (chosen.empty()) return *command;
    command = chosen.front();
  }
}

std::string command_path(const CLI::App& command) {
  std::string path = command.get_name();
  for (const CLI::App* parent = command.get_parent(); parent != nullptr; parent = parent->get_parent()) {
    path = parent->get_name() + " " + path;
  }
  return path;
}

namespace {

// CLI11's sentences start in lower case or name the option first, and some end without a
// full stop; ours end with one.
std::string sentence(std::string text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  if (!text.empty() && text.back() != '.') text += '.';
  return text;
}

}  // namespace

std::optional<int> parse_command_line(CLI::App& parser, std::vector<std::string> arguments) {
  // A word where a command belongs that names none: CLI11 would only say one is required.
  const auto commands = parser.get_subcommands({});
  if (!arguments.empty() && !arguments.front().starts_with("-") && !commands.empty() &&
      std::none_of(commands.begin(), commands.end(),
                   [&](const CLI::App* command) { return command->check_name(arguments.front()); })) {
    std::fprintf(stderr, "%s: unknown command '%s'.\nRun '%s --help' for usage.\n", parser.get_name().c_str(),
                 arguments.front().c_str(), parser.get_name().c_str());
    return kUsageExitStatus;
  }
  // CLI11 takes the arguments last first.
  std::reverse(arguments.begin(), arguments.end());
  try {
    parser.parse(arguments);
    return std::nullopt;
  } catch (const CLI::CallForHelp&) {
    std::fputs(parser.help().c_str(), stdout);
    return 0;
  } catch (const CLI::CallForAllHelp&) {
    std::fputs(parser.help("", CLI::AppFormatMode::All).c_str(), stdout);
    return 0;
  } catch (const CLI::CallForVersion& version) {
    std::puts(version.what());
    return 0;
  } catch (const CLI::ParseError& error) {
    const std::string path = command_path(chosen_command(parser));
    std::fprintf(stderr, "%s: %s\nRun '%s --help' for usage.\n", path.c_str(), sentence(error.what()).c_str(),
                 path.c_str());
    return kUsageExitStatus;
  }
}

CLI::Option* add_value_once(CLI::App& command, const std::string& name, std::string& into,
                            const std::string& description) {
  auto* option = command.add_option_function<std::vector<std::string>>(
      name,
      [name, &into](const std::vector<std::string>& values) {
        if (values.size() > 1) throw CLI::ValidationError(name + " is given twice");
        into = values.front();
      },
      description);
  option->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)->type_size(1)->expected(1)->allow_extra_args(false);
  return option;
}

}  // namespace deskd
