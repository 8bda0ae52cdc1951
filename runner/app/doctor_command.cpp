#include "runner/app/doctor_command.h"

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "sandbox/host_support.h"

namespace deskd::app {

const char* const kDoctorUsage =
    "usage: deskd doctor [--json]\n"
    "\n"
    "Says which isolation this host offers deskd's sandbox: user and mount namespaces,\n"
    "seccomp, landlock, cgroup v2 delegation, openat2, pidfd, mount_setattr; what was found\n"
    "for each, and how to fix what is missing. Run it as the user deskd will run as.\n"
    "\n"
    "  --json    print the checks as a JSON array of\n"
    "            {\"name\", \"available\", \"required\", \"detail\", \"fix\"}\n"
    "\n"
    "Exit status: 0 a full sandbox can start, 1 it cannot, 2 bad usage.\n";

namespace {

using sandbox::SupportCheck;

int usage_error(const std::string& message) {
  std::fprintf(stderr, "deskd doctor: %s\n\n%s", message.c_str(), kDoctorUsage);
  return 2;
}

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

}  // namespace

int run_doctor_command(std::span<const std::string_view> arguments) {
  bool json = false;
  for (const std::string_view argument : arguments) {
    if (argument == "--help" || argument == "-h") {
      std::fputs(kDoctorUsage, stdout);
      return 0;
    }
    if (argument == "--json") {
      json = true;
      continue;
    }
    if (argument.starts_with("-")) return usage_error("unknown option " + std::string(argument) + ".");
    return usage_error("takes no arguments, but was given " + std::string(argument) + ".");
  }

  const std::vector<SupportCheck> checks = sandbox::check_host_support();
  if (json) {
    print_json(checks);
  } else {
    print_table(checks);
  }
  return sandbox::full_sandbox_possible(checks) ? 0 : 1;
}

}  // namespace deskd::app
