#include "sandbox/refusal_report.h"

namespace deskd::sandbox {

std::string_view enforcer_name(Enforcer enforcer) {
  switch (enforcer) {
    case Enforcer::seccomp: return "seccomp";
    case Enforcer::landlock: return "landlock";
    case Enforcer::path_policy: return "path_policy";
    case Enforcer::egress: return "egress";
    case Enforcer::api_gate: return "api_gate";
    case Enforcer::limit: return "limit";
  }
  return "unknown";
}

std::string refusal_line(const Refusal& refusal) {
  return "deskd refused: " + refusal.what + " \u2014 " + refusal.rule;
}

std::string with_refusal_lines(std::string text, const std::vector<std::string>& lines) {
  if (lines.empty()) return text;
  if (!text.empty() && text.back() != '\n') text += '\n';
  for (const std::string& line : lines) text += line + '\n';
  text.pop_back();
  return text;
}

}  // namespace deskd::sandbox
