// Help that cannot drift: every option deskd-full and deskctl accept is in that command's
// --help and in its man page (deskd(8), deskctl(1)), found by walking the CLI11 parsers
// themselves rather than a list kept beside them.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "base/command_line.h"
#include "runner/app/command_options.h"
#include "runner/app/deskd_command.h"
#include "runner/app/sandbox_command.h"
#include "runner/deskctl/deskctl.h"
#include "sandbox/uid_registry.h"

namespace deskd::app {
namespace {

std::string read_text(const std::string& path) {
  std::ifstream file(path);
  std::stringstream text;
  text << file.rdbuf();
  return text.str();
}

// The man page as a reader sees its words: "\-\-hide" is "--hide".
std::string plain_roff(std::string text) {
  for (const char* escape : {"\\&", "\\fB", "\\fI", "\\fP", "\\fR"}) {
    for (std::size_t at = text.find(escape); at != std::string::npos; at = text.find(escape, at)) {
      text.erase(at, std::string_view(escape).size());
    }
  }
  for (std::size_t at = text.find("\\-"); at != std::string::npos; at = text.find("\\-", at)) text.erase(at, 1);
  return text;
}

// "--allow" is in "--allow PATTERN", not in "--allow-supplementary-groups".
bool names_option(const std::string& text, const std::string& option) {
  const std::regex whole("(^|[^a-z-])" + option + "($|[^a-z-])");
  return std::regex_search(text, whole);
}

// deskd(8)'s sections by their .SS or .SH title.
std::map<std::string, std::string> man_sections(const std::string& page) {
  std::map<std::string, std::string> sections;
  std::string title;
  std::istringstream lines(page);
  for (std::string line; std::getline(lines, line);) {
    if (line.starts_with(".SS ") || line.starts_with(".SH ")) {
      title = line.substr(4);
      continue;
    }
    sections[title] += line + "\n";
  }
  return sections;
}

// Where deskd(8) may describe an option of `command`: its own section ("deskd run ...")
// and the shared option sections whose opening sentence names the command.
std::string man_text_for(const std::map<std::string, std::string>& sections, const std::string& command) {
  std::string text;
  for (const auto& [title, body] : sections) {
    if (title.starts_with("deskd " + command + " ") || title == "deskd " + command) text += body;
    if (title.ends_with(" options")) {
      const std::string opening = body.substr(0, body.find(".TP"));
      if (names_option(opening, command)) text += body;
    }
  }
  return text;
}

std::vector<std::string> option_names(const CLI::Option& option) {
  std::vector<std::string> names;
  for (const auto& name : option.get_lnames()) names.push_back("--" + name);
  for (const auto& name : option.get_snames()) names.push_back("-" + name);
  return names;
}

bool is_help_or_version(const CLI::Option& option) {
  const auto& names = option.get_lnames();
  return std::find(names.begin(), names.end(), "help") != names.end() ||
         std::find(names.begin(), names.end(), "version") != names.end();
}

TEST(HelpCoverageTest, EveryDeskdOptionIsInItsHelpAndInDeskd8) {
  std::vector<DeskdCommand> commands;
  auto deskd = make_deskd_parser(commands);
  const auto sections = man_sections(plain_roff(read_text(DESKD_SOURCE_DIR "/packaging/man/deskd.8")));
  std::size_t checked = 0;
  for (const CLI::App* command : deskd->get_subcommands({})) {
    const std::string help = command->help();
    const std::string man = man_text_for(sections, command->get_name());
    EXPECT_FALSE(man.empty()) << "deskd(8) has no section for deskd " << command->get_name();
    for (const CLI::Option* option : command->get_options()) {
      if (option->get_positional() || is_help_or_version(*option)) continue;
      for (const std::string& name : option_names(*option)) {
        ++checked;
        EXPECT_TRUE(names_option(help, name)) << "deskd " << command->get_name() << " --help leaves out " << name;
        EXPECT_TRUE(names_option(man, name)) << "deskd(8) says nothing of deskd " << command->get_name() << " " << name;
      }
    }
  }
  EXPECT_GT(checked, 40u);  // the walk really found the commands' options
}

TEST(HelpCoverageTest, DeskdSandboxHelpNamesEverySandboxOption) {
  // `deskd sandbox` keeps the lean deskd's small parser and its written help; the options
  // it shares with run, shell and mcp are walked from their parser.
  CLI::App scratch;
  SandboxOptions options;
  add_sandbox_options(scratch, options);
  const std::string usage = sandbox_usage();
  const auto sections = man_sections(plain_roff(read_text(DESKD_SOURCE_DIR "/packaging/man/deskd.8")));
  const std::string man = man_text_for(sections, "sandbox");
  for (const CLI::Option* option : scratch.get_options()) {
    if (is_help_or_version(*option)) continue;
    for (const std::string& name : option_names(*option)) {
      EXPECT_TRUE(names_option(usage, name)) << "deskd sandbox --help leaves out " << name;
      EXPECT_TRUE(names_option(man, name)) << "deskd(8) says nothing of deskd sandbox " << name;
    }
  }
  for (const std::string name : {"--desk", "--print-seccomp"}) {
    EXPECT_TRUE(names_option(usage, name)) << name;
    EXPECT_TRUE(names_option(man, name)) << name;
  }
}

// The ad-hoc sandbox's uid is told in three texts beside the constant deskd uses; deskd(8)
// once gave the desk uid range's start instead.
TEST(HelpCoverageTest, TheAdHocUidDefaultIsTheOneDeskdUses) {
  const std::string told = "default " + std::to_string(sandbox::kAdHocDeskUid);
  CLI::App scratch;
  SandboxOptions options;
  add_sandbox_options(scratch, options);
  EXPECT_THAT(scratch.help(), ::testing::HasSubstr(told)) << "deskd run/shell/mcp --help";
  EXPECT_THAT(sandbox_usage(), ::testing::HasSubstr(told)) << "deskd sandbox --help";
  const auto sections = man_sections(plain_roff(read_text(DESKD_SOURCE_DIR "/packaging/man/deskd.8")));
  EXPECT_THAT(man_text_for(sections, "sandbox"), ::testing::HasSubstr(told)) << "deskd(8)";
}

TEST(HelpCoverageTest, EveryDeskctlOptionIsInItsHelpAndInDeskctl1) {
  control::DeskctlRequest request;
  auto deskctl = control::make_deskctl_parser(request);
  const std::string man = plain_roff(read_text(DESKD_SOURCE_DIR "/packaging/man/deskctl.1"));
  std::vector<const CLI::App*> parsers{deskctl.get()};
  for (const CLI::App* command : deskctl->get_subcommands({})) parsers.push_back(command);
  std::size_t checked = 0;
  for (const CLI::App* parser : parsers) {
    const std::string help = parser->help();
    if (parser != deskctl.get()) {
      EXPECT_TRUE(names_option(man, parser->get_name())) << "deskctl(1) says nothing of " << parser->get_name();
    }
    for (const CLI::Option* option : parser->get_options()) {
      if (option->get_positional() || is_help_or_version(*option)) continue;
      for (const std::string& name : option_names(*option)) {
        ++checked;
        EXPECT_TRUE(names_option(help, name)) << "deskctl " << parser->get_name() << " --help leaves out " << name;
        EXPECT_TRUE(names_option(man, name)) << "deskctl(1) says nothing of " << name;
      }
    }
  }
  EXPECT_GE(checked, 5u);
}

}  // namespace
}  // namespace deskd::app
