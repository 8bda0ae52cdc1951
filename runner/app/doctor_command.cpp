#include "runner/app/doctor_command.h"

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <memory>
#include <cstdio>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "base/command_line.h"
#include "runner/app/desk_id_range_check.h"
#include "runner/app/deskd_command.h"
#include "runner/config/config.h"
#include "runner/daemon/desk_ids.h"
#include "sandbox/cgroup_limits.h"
#include "sandbox/host_support.h"
#include "sandbox/launch_trial.h"
#include "sandbox/own_user_namespace.h"
#include "sandbox/supplementary_groups.h"

namespace deskd::app {

namespace {

constexpr const char* kDoctorDescription =
    "Says which isolation this host offers deskd's sandbox: user and mount namespaces,\n"
    "seccomp, landlock, cgroup v2 delegation, openat2, pidfd, mount_setattr; what was found\n"
    "for each, and how to fix what is missing. Run it as the user deskd will run as.\n"
    "It also checks that no user, group, subordinate id range or process of the host uses\n"
    "the uids a root deskd gives its desks (the range of --config's [runner]; when the\n"
    "default config does not exist, the default range, and it says so).\n"
    "\n"
    "Exit status: 0 a full sandbox can start, 1 it cannot, 2 bad usage or a config with\n"
    "problems.";

}  // namespace

namespace {

using sandbox::SupportCheck;

std::string status_word(const SupportCheck& check) {
  if (check.available) return "[ok]";
  return check.required ? "[missing]" : "[optional: missing]";
}

std::string padded(std::string text, std::size_t width) {
  if (text.size() < width) text.append(width - text.size(), ' ');
  return text;
}

// "a", "a and b", "a, b and c".
std::string joined_names(const std::vector<std::string>& names) {
  std::string text;
  for (std::size_t index = 0; index < names.size(); ++index) {
    if (index > 0) text += index + 1 == names.size() ? " and " : ", ";
    text += names[index];
  }
  return text;
}

void print_table(const std::vector<SupportCheck>& checks) {
  std::size_t status_width = 0;
  std::size_t name_width = 0;
  for (const auto& check : checks) {
    status_width = std::max(status_width, status_word(check).size());
    name_width = std::max(name_width, check.name.size());
  }
  const std::string indent(status_width + 2 + name_width + 2, ' ');
  for (const auto& check : checks) {
    std::printf("%s  %s  %s\n", padded(status_word(check), status_width).c_str(),
                padded(check.name, name_width).c_str(), check.detail.c_str());
    if (!check.available && !check.fix.empty()) std::printf("%sfix: %s\n", indent.c_str(), check.fix.c_str());
  }

  std::vector<std::string> missing_required;
  for (const auto& check : checks) {
    if (check.required && !check.available) missing_required.push_back(check.name);
  }
  std::printf("\n");
  if (missing_required.empty()) {
    std::printf("A full sandbox can start on this host.\n");
  } else {
    std::printf("A full sandbox cannot start on this host: %s %s missing.\n",
                joined_names(missing_required).c_str(), missing_required.size() == 1 ? "is" : "are");
  }
}

std::string json_string(const std::string& text) {
  std::string quoted = "\"";
  for (const char character : text) {
    switch (character) {
      case '"': quoted += "\\\""; break;
      case '\\': quoted += "\\\\"; break;
      case '\n': quoted += "\\n"; break;
      case '\r': quoted += "\\r"; break;
      case '\t': quoted += "\\t"; break;
      default:
        if (static_cast<unsigned char>(character) < 0x20) {
          char escaped[8];
          std::snprintf(escaped, sizeof escaped, "\\u%04x", static_cast<unsigned>(character));
          quoted += escaped;
        } else {
          quoted += character;  // UTF-8 passes through unchanged
        }
    }
  }
  return quoted + "\"";
}

void print_json(const std::vector<SupportCheck>& checks) {
  std::string text = "[";
  for (std::size_t index = 0; index < checks.size(); ++index) {
    const SupportCheck& check = checks[index];
    text += index == 0 ? "\n" : ",\n";
    text += "  {\"name\": " + json_string(check.name) +
            ", \"available\": " + (check.available ? "true" : "false") +
            ", \"required\": " + (check.required ? "true" : "false") +
            ", \"detail\": " + json_string(check.detail) + ", \"fix\": " + json_string(check.fix) + "}";
  }
  text += "\n]\n";
  std::fputs(text.c_str(), stdout);
}

int run_doctor(bool json, std::optional<std::string> config_file, bool named) {
  if (config_file && config_file->empty()) {
    std::fputs("deskd doctor: --config needs a file name.\nRun 'deskd doctor --help' for usage.\n", stderr);
    return kUsageExitStatus;
  }
  std::error_code missing;
  if (!named && !std::filesystem::exists(*config_file, missing)) {
    // The host's isolation is worth knowing before any config exists; only the uid range
    // falls back to the default, and the person is told why.
    std::fprintf(stderr,
                 "deskd doctor: no --config was given and the default config %s does not exist; the desk uid range "
                 "checked is the default one.\n",
                 config_file->c_str());
    config_file.reset();
  }
  Config config;  // the default desk uid range
  std::set<uid_t> desk_ids;
  if (config_file) {
    ConfigLoad load = load_config(*config_file);
    if (!load.config) {
      for (const auto& problem : load.problems) std::fprintf(stderr, "%s\n", problem.to_string().c_str());
      return 2;
    }
    config = std::move(*load.config);
    // A running deskd's desks use their ids already; they are not strangers to the range.
    auto known = read_desk_ids(config);
    if (known.ok()) {
      for (const auto& [name, uid] : *known) desk_ids.insert(uid);
    } else {
      std::fprintf(stderr, "deskd doctor: %s\n", known.error().what.c_str());
    }
  }

  std::vector<SupportCheck> checks = sandbox::check_host_support();
  checks.push_back(check_desk_id_range(config.runner.desk_uid_first, config.runner.desk_uid_count, desk_ids,
                                       ::geteuid() == 0));
  checks.push_back(sandbox::check_desk_limits());
  checks.push_back(sandbox::check_own_user_namespace());
  // Without a config nothing allows the groups; with one, every desk must.
  const bool groups_allowed =
      config_file && std::all_of(config.desks.begin(), config.desks.end(),
                                 [](const DeskConfig& desk) { return desk.sandbox.allow_supplementary_groups; });
  checks.push_back(sandbox::report_supplementary_groups(groups_allowed));
  // Last, and only when every feature is there: what a launch really does, step by step.
  if (sandbox::full_sandbox_possible(checks)) checks.push_back(sandbox::try_sandbox_launch(groups_allowed));
  if (json) {
    print_json(checks);
  } else {
    print_table(checks);
  }
  return sandbox::full_sandbox_possible(checks) ? 0 : 1;
}

}  // namespace

DeskdCommand add_doctor_command(CLI::App& deskd) {
  auto* command =
      deskd.add_subcommand("doctor", "say which isolation this host supports, and how to fix what is missing");
  command->footer(kDoctorDescription);
  struct Options {
    std::string config_file = kDefaultConfigPath;
    bool json = false;
  };
  auto options = std::make_shared<Options>();
  auto* config = add_value_once(*command, "--config", options->config_file,
                                std::string("take the desk uid range from this config (default ") +
                                    kDefaultConfigPath + ")");
  config->type_name("FILE");
  command->add_flag("--json", options->json,
                    "print the checks as a JSON array of {\"name\", \"available\", \"required\", \"detail\", \"fix\"}");
  return {command, [options, config] {
            return run_doctor(options->json, options->config_file, config->count() > 0);
          }};
}

}  // namespace deskd::app
