// What deskctl prints for the API gate's commands: the calls waiting for approval, a
// decision, and a desk's ledger. Every field came from a desk (URLs, summaries, ledger lines
// hold what its code sent), so each is shown through base/terminal_text.h.

#include <boost/json.hpp>

#include <cstdio>

#include "base/terminal_text.h"
#include "runner/deskctl/deskctl_output.h"

namespace deskd::control::deskctl {

namespace json = boost::json;

namespace {

std::string expires_in(const json::object& approval) {
  const json::value* seconds = approval.if_contains("expires_in_seconds");
  if (seconds == nullptr || !seconds->is_number()) return "?";
  boost::system::error_code error;
  const auto left = seconds->to_number<long long>(error);
  if (error) return "?";
  return left <= 0 ? "now" : std::to_string(left) + " s";
}

}  // namespace

int print_approvals_reply(const json::object& reply) {
  const json::array& waiting = reply.at("approvals").as_array();
  if (waiting.empty()) {
    std::puts("No API calls wait for approval.");
    return kOk;
  }
  std::printf("%-15s  %-16s %-10s %-10s %s\n", "ID", "DESK", "API", "EXPIRES IN", "CALL");
  for (const auto& value : waiting) {
    const json::object& approval = value.as_object();
    std::printf("%-15s  %-16s %-10s %-10s %s %s\n", shown(approval, "id").c_str(), shown(approval, "desk").c_str(),
                shown(approval, "api").c_str(), expires_in(approval).c_str(), shown(approval, "method").c_str(),
                shown(approval, "url").c_str());
    if (!text_of(approval, "summary").empty()) std::printf("  %s\n", shown(approval, "summary").c_str());
    std::printf("  sha256 %s (rule %s)\n", shown(approval, "sha256").c_str(), shown(approval, "rule").c_str());
  }
  return kOk;
}

int print_approval_decision_reply(const json::object& reply) {
  const json::object& approval = reply.at("approval").as_object();
  std::printf("Request %s of desk %s %s: %s %s\n", shown(approval, "id").c_str(), shown(approval, "desk").c_str(),
              shown(approval, "decision").c_str(), shown(approval, "method").c_str(), shown(approval, "url").c_str());
  return kOk;
}

int print_ledger_reply(const json::object& reply) {
  const json::object& ledger = reply.at("ledger").as_object();
  if (const json::value* lines = ledger.if_contains("lines"); lines != nullptr && lines->is_array()) {
    for (const auto& line : lines->as_array()) {
      std::puts(terminal_text(line.is_string() ? std::string_view(line.as_string()) : "").c_str());
    }
  }
  const json::value* verified = ledger.if_contains("verified");
  if (verified == nullptr || !verified->is_bool()) return kOk;
  if (verified->as_bool()) {
    std::printf("ledger intact: %s lines\n", shown(ledger, "verified_lines").c_str());
    return kOk;
  }
  std::printf("ledger NOT intact: %s\n", shown(ledger, "problem").c_str());
  return kRefused;
}

}  // namespace deskd::control::deskctl
