#include "runner/deskctl/deskctl_output.h"

#include <boost/json.hpp>

#include <cstdio>
#include <string_view>

#include "base/terminal_text.h"
#include "runner/control_protocol/control_protocol.h"
#include "runner/events/event_text.h"
#include "runner/events/india_time.h"

namespace deskd::control::deskctl {

namespace json = boost::json;

std::string text_of(const json::object& object, const char* key) {
  const json::value* value = object.if_contains(key);
  if (value == nullptr || value->is_null()) return {};
  return value->is_string() ? std::string(value->as_string()) : json::serialize(*value);
}

std::string shown(const json::object& object, const char* key) { return terminal_text(text_of(object, key)); }

std::string shown_lines(const json::object& object, const char* key) {
  return terminal_text(text_of(object, key), LineBreaks::kept);
}

std::string shown_time(const json::object& object, const char* key) {
  return terminal_text(desk::readable_india_time(text_of(object, key)));
}

std::string shown_path(const json::object& object, const char* key) { return terminal_path(text_of(object, key)); }

bool is_ok(const json::object& reply) {
  const json::value* ok = reply.if_contains(field::kOk);
  return ok != nullptr && ok->is_bool() && ok->as_bool();
}

int refused(const json::object& reply, bool json_output) {
  if (json_output) std::puts(json::serialize(reply).c_str());
  std::fprintf(stderr, "deskctl: %s\n", shown_lines(reply, "error").c_str());
  return kRefused;
}

int unreachable(const Error& error) {
  std::fprintf(stderr, "deskctl: %s\n", error.what.c_str());
  return kUnreachable;
}

std::string joined(const std::vector<std::string>& words) {
  std::string text;
  for (std::size_t index = 0; index < words.size(); ++index) text += (index > 0 ? " " : "") + words[index];
  return text;
}

namespace {

void print_desks(const json::array& desks) {
  std::printf("%-20s %-9s %-8s %-7s %s\n", "DESK", "STATE", "MODE", "QUEUED", "MODEL");
  for (const auto& value : desks) {
    const json::object& desk = value.as_object();
    std::string state = shown(desk, "state");
    if (text_of(desk, "paused") == "true") state += " (paused)";
    std::printf("%-20s %-9s %-8s %-7s %s\n", shown(desk, "name").c_str(), state.c_str(), shown(desk, "mode").c_str(),
                shown(desk, "queued").c_str(), shown(desk, "model").c_str());
    if (!text_of(desk, "error").empty()) std::printf("  error: %s\n", shown(desk, "error").c_str());
  }
}

}  // namespace

int print_desks_reply(const json::object& reply) {
  print_desks(reply.at("desks").as_array());
  return kOk;
}

int print_status_reply(const json::object& reply) {
  const json::object& status = reply.at("status").as_object();
  if (const json::value* desks = status.if_contains("desks"); desks != nullptr && desks->is_array()) {
    std::printf("deskd at %s%s\n", shown_time(status, "time").c_str(),
                text_of(status, "stopping") == "true" ? " (stopping)" : "");
    print_desks(desks->as_array());
    return kOk;
  }
  for (const char* key :
       {"name", "state", "mode", "paused", "queued", "model", "directory", "network", "open_proposals", "error"}) {
    if (!status.contains(key)) continue;
    const std::string value = std::string_view(key) == "directory" ? shown_path(status, key) : shown(status, key);
    std::printf("%-15s %s\n", (std::string(key) + ":").c_str(), value.c_str());
  }
  if (const json::value* schedules = status.if_contains("schedules"); schedules != nullptr && schedules->is_array()) {
    for (const auto& schedule : schedules->as_array()) {
      std::printf("schedule:       %s, next %s\n", shown(schedule.as_object(), "name").c_str(),
                  shown_time(schedule.as_object(), "next").c_str());
    }
  }
  if (status.contains("usage")) std::printf("usage:\n%s\n", shown_lines(status, "usage").c_str());
  return kOk;
}

namespace {

std::string budget_amount(const json::object& budget, const char* key, bool tokens) {
  const json::value* value = budget.if_contains(key);
  if (value == nullptr || !value->is_number()) return "?";
  char buffer[64];
  const double amount = value->to_number<double>();
  if (tokens) {
    std::snprintf(buffer, sizeof buffer, "%.0f tokens", amount);
  } else {
    std::snprintf(buffer, sizeof buffer, amount >= 0.1 || amount == 0 ? "$%.2f" : "$%.4f", amount);
  }
  return buffer;
}

std::string whole_number(const json::object& object, const char* key) {
  const json::value* value = object.if_contains(key);
  if (value == nullptr || !value->is_number()) return "?";
  return std::to_string(value->to_number<std::uint64_t>());
}

}  // namespace

int print_budget_reply(const json::object& reply) {
  const json::object& budget = reply.at("budget").as_object();
  bool any = false;
  if (budget.contains("daily_usd")) {
    std::printf("daily_usd:    cap %s", budget_amount(budget, "daily_usd", false).c_str());
    if (budget_amount(budget, "added_usd", false) != "$0.00") {
      std::printf(" (%s added today)", budget_amount(budget, "added_usd", false).c_str());
    }
    std::printf(", spent %s, reserved %s, left %s\n", budget_amount(budget, "spent_usd", false).c_str(),
                budget_amount(budget, "reserved_usd", false).c_str(), budget_amount(budget, "left_usd", false).c_str());
    any = true;
  }
  if (budget.contains("daily_tokens")) {
    std::printf("daily_tokens: cap %s, spent %s, reserved %s, left %s\n",
                budget_amount(budget, "daily_tokens", true).c_str(), budget_amount(budget, "spent_tokens", true).c_str(),
                budget_amount(budget, "reserved_tokens", true).c_str(), budget_amount(budget, "left_tokens", true).c_str());
    any = true;
  }
  if (budget.contains("per_turn_usd")) {
    std::printf("per_turn_usd: %s a turn\n", budget_amount(budget, "per_turn_usd", false).c_str());
    any = true;
  }
  if (!any) {
    std::printf("No spend caps; spent today %s (%s), reserved %s.\n", budget_amount(budget, "spent_usd", false).c_str(),
                budget_amount(budget, "spent_tokens", true).c_str(), budget_amount(budget, "reserved_usd", false).c_str());
    return kOk;
  }
  std::printf("resets:       %s\n", shown(budget, "resets").c_str());
  return kOk;
}

int print_trigger_reply(const json::object& reply) {
  std::puts(shown(reply, "trigger").c_str());
  return kOk;
}

// The URL alone on its line (a script takes it whole), and how long it is good for.
int print_web_url_reply(const json::object& reply) {
  std::puts(shown(reply, "url").c_str());
  std::fprintf(stderr, "One login, within %s seconds.\n", shown(reply, "expires_in_seconds").c_str());
  return kOk;
}

int print_commands_reply(const json::object& reply) {
  for (const auto& entry : reply.at("commands").as_array()) {
    std::printf("%-16s %s\n", shown(entry.as_object(), "name").c_str(),
                shown(entry.as_object(), "description").c_str());
  }
  return kOk;
}

int print_proposals_reply(const json::object& reply) {
  const json::array& proposals = reply.at("proposals").as_array();
  if (proposals.empty()) std::puts("No proposals.");
  for (const auto& value : proposals) {
    const json::object& proposal = value.as_object();
    std::printf("%s  %-8s  %s  %s\n  %s\n  why: %s\n", shown(proposal, "id").c_str(), shown(proposal, "status").c_str(),
                shown(proposal, "desk").c_str(), shown_time(proposal, "time").c_str(),
                shown_path(proposal, "path").c_str(), shown(proposal, "reason").c_str());
    // The diff keeps its lines; within them, what the desk wrote is shown escaped.
    const std::string diff = shown_lines(proposal, "diff");
    if (!diff.empty() && text_of(proposal, "status") == "open")
      std::printf("%s%s", diff.c_str(), diff.back() == '\n' ? "" : "\n");
  }
  return kOk;
}

int print_refusals_reply(const json::object& reply) {
  const json::array& refusals = reply.at("refusals").as_array();
  if (refusals.empty()) std::puts("No refusals.");
  for (const auto& value : refusals) {
    const json::object& event = value.as_object();
    std::fputs(desk::event_text(event, /*everything=*/true).c_str(), stdout);
    const json::object* data = event.if_contains("data") ? event.at("data").if_object() : nullptr;
    if (data == nullptr) continue;
    std::string more;
    for (const char* field : {"details", "trigger", "tool_call", "dropped_before"}) {
      const std::string text = shown(*data, field);
      if (!text.empty()) more += std::string(more.empty() ? "" : "; ") + field + " " + text;
    }
    if (!more.empty()) std::printf("    %s\n", more.c_str());
  }
  return kOk;
}

// One line a day, newest last, and the last day's split by model.
int print_spend_reply(const json::object& reply) {
  for (const auto& value : reply.at("desks").as_array()) {
    const json::object& desk = value.as_object();
    const json::array& days = desk.at("days").as_array();
    const bool running = desk.if_contains("running") != nullptr && desk.at("running").is_bool() &&
                         desk.at("running").as_bool();
    std::printf("%s%s\n", shown(desk, "desk").c_str(), running ? "" : " (not running: no usage to read)");
    for (const auto& day_value : days) {
      const json::object& day = day_value.as_object();
      std::printf("  %s  %s requests  %s  %s\n", shown(day, "date").c_str(), whole_number(day, "requests").c_str(),
                  budget_amount(day, "tokens", true).c_str(),
                  day.contains("cost_usd") ? budget_amount(day, "cost_usd", false).c_str() : "cost unknown");
    }
    if (days.empty()) continue;
    for (const auto& [model, usage_value] : days.back().as_object().at("models").as_object()) {
      const json::object& usage = usage_value.as_object();
      std::printf("    %s: %s in, %s out, %s", terminal_text(model).c_str(),
                  budget_amount(usage, "input_tokens", true).c_str(), budget_amount(usage, "output_tokens", true).c_str(),
                  usage.contains("cost_usd") ? budget_amount(usage, "cost_usd", false).c_str() : "cost unknown");
      std::fputc('\n', stdout);
    }
  }
  return kOk;
}

int print_metrics_reply(const json::object& reply) {
  const std::string text = shown_lines(reply, "metrics");
  std::fputs(text.c_str(), stdout);
  if (!text.empty() && text.back() != '\n') std::fputc('\n', stdout);
  return kOk;
}

int print_decision_reply(const json::object& reply) {
  const json::object& proposal = reply.at("proposal").as_object();
  std::printf("Proposal %s %s: %s\n", shown(proposal, "id").c_str(), shown(proposal, "status").c_str(),
              shown_path(proposal, "path").c_str());
  return kOk;
}

int print_reload_reply(const json::object& reply) {
  const json::object& reload = reply.at("reload").as_object();
  for (const char* what : {"started", "stopped", "restarted", "kept"}) {
    const json::value* list = reload.if_contains(what);
    if (list == nullptr || !list->is_array() || list->as_array().empty()) continue;
    std::string names;
    for (const auto& name : list->as_array()) {
      names += (names.empty() ? "" : ", ") + terminal_text(name.is_string() ? std::string_view(name.as_string()) : "");
    }
    std::printf("%-10s %s\n", what, names.c_str());
  }
  if (const json::value* failed = reload.if_contains("failed"); failed != nullptr && failed->is_object()) {
    for (const auto& [name, why] : failed->as_object()) {
      std::printf("failed     %s: %s\n", terminal_text(name).c_str(),
                  terminal_text(why.is_string() ? std::string_view(why.as_string()) : "").c_str());
    }
    return failed->as_object().empty() ? kOk : kRefused;
  }
  return kOk;
}

int print_reply_fields(const json::object& reply) {
  for (const auto& [key, value] : reply) {
    if (key == field::kId || key == field::kOk) continue;
    const std::string name = terminal_text(key) + ":";
    std::printf("%-15s %s\n", name.c_str(), shown(reply, std::string(key).c_str()).c_str());
  }
  return kOk;
}

}  // namespace deskd::control::deskctl
