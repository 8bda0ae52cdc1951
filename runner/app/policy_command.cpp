#include "runner/app/policy_command.h"

#include <cstdio>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/command_line.h"
#include "policy/path_policy.h"
#include "runner/app/deskd_command.h"

namespace deskd::app {

namespace {

constexpr const char* kPolicyDescription =
    "Answers as a desk's file tools would: whether PATH may be read or written, and the\n"
    "resolved path. A relative PATH starts at the desk folder; a relative --hide path starts\n"
    "at the current folder.\n"
    "\n"
    "Exit status: 0 allowed, 1 refused, 2 bad usage or a confinement that cannot be built.";

struct PolicyQuestion {
  std::string desk_directory;
  std::vector<std::string> hidden_paths;
  std::string action;
  std::string path;
};

int answer(const PolicyQuestion& question) {
  if (question.action != "read" && question.action != "write") {
    std::fprintf(stderr, "deskd policy: the action must be read or write, not %s.\nRun 'deskd policy --help' for usage.\n",
                 question.action.c_str());
    return kUsageExitStatus;
  }
  std::vector<std::filesystem::path> hidden_paths;
  for (const auto& hidden : question.hidden_paths) {
    const std::filesystem::path value{hidden};
    std::error_code error;
    hidden_paths.push_back(value.is_absolute() ? value : std::filesystem::absolute(value, error));
  }
  auto policy = policy::PathPolicy::create(question.desk_directory, hidden_paths);
  if (!policy.ok()) {
    std::fprintf(stderr, "deskd policy: %s\n", policy.error().what.c_str());
    return 2;
  }
  const auto allowed = question.action == "read" ? policy->readable(question.path) : policy->writable(question.path);
  if (!allowed.ok()) {
    std::printf("refused: %s\n", allowed.error().what.c_str());
    return 1;
  }
  std::printf("allowed: %s\n", allowed->c_str());
  return 0;
}

}  // namespace

DeskdCommand add_policy_command(CLI::App& deskd) {
  auto* command = deskd.add_subcommand("policy", "answer what a desk's file tools may read or write");
  command->footer(kPolicyDescription);
  auto question = std::make_shared<PolicyQuestion>();
  command->add_option("--desk", question->desk_directory, "the desk's folder (must exist)")
      ->type_name("DIR")
      ->required()
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  command->add_option("--hide", question->hidden_paths, "a secret file or folder the desk may not read (repeatable)")
      ->type_name("PATH")
      ->type_size(1)
      ->expected(1)
      ->allow_extra_args(false)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  command->add_option("action", question->action, "read or write")
      ->type_name("read|write")
      ->required();
  command->add_option("path", question->path, "the path to ask about")->type_name("PATH")->required();
  return {command, [question] { return answer(*question); }};
}

}  // namespace deskd::app
