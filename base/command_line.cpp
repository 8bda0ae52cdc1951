#include "base/command_line.h"

#include <algorithm>
#include <cstdio>
#include <sstream>

namespace deskd {
namespace {

constexpr std::size_t kNameColumns = 28;
constexpr std::size_t kHelpColumns = 92;

// Breaks `text` into lines that fit beside the names' column: CLI11 2.1 writes each
// description on one line, however long, and indents what follows a line break.
std::string wrapped(const std::string& text) {
  const std::size_t width = kHelpColumns - kNameColumns;
  std::string result;
  std::size_t line_length = 0;
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t end = text.find(' ', start);
    if (end == std::string::npos) end = text.size();
    const std::string word = text.substr(start, end - start);
    if (line_length > 0 && line_length + 1 + word.size() > width) {
      result += '\n';
      line_length = 0;
    } else if (line_length > 0) {
      result += ' ';
      ++line_length;
    }
    result += word;
    line_length += word.size();
    start = end + 1;
  }
  return result;
}

class WrappingFormatter : public CLI::Formatter {
 public:
  std::string make_option_desc(const CLI::Option* option) const override {
    return wrapped(CLI::Formatter::make_option_desc(option));
  }
  std::string make_subcommand(const CLI::App* command) const override {
    std::stringstream out;
    CLI::detail::format_help(out, command->get_display_name(true), wrapped(command->get_description()),
                             column_width_);
    return out.str();
  }
};

}  // namespace

std::unique_ptr<CLI::App> make_command_line_parser(const std::string& description, const std::string& program) {
  auto parser = std::make_unique<CLI::App>(description, program);
  parser->formatter(std::make_shared<WrappingFormatter>());
  parser->get_formatter()->column_width(kNameColumns);
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
