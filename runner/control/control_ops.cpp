#include "runner/control/control_ops.h"

#include <boost/json.hpp>

#include <algorithm>
#include <deque>

#include "runner/control/control_service.h"

namespace deskd::control {

namespace json = boost::json;

namespace {

// --- reply builders: the values the service returns, as the protocol's JSON ---

json::object summary_reply(const DeskSummary& desk) {
  json::object object{{"name", desk.name}, {"mode", desk.mode}, {"directory", desk.directory}, {"state", desk.state}};
  if (desk.error) object["error"] = *desk.error;
  if (desk.running) {
    object["paused"] = desk.running->paused;
    object["queued"] = desk.running->queued;
    object["waiting_bytes"] = desk.running->waiting_bytes;
    object["model"] = desk.running->model;
  }
  return object;
}

json::array summaries_reply(const std::vector<DeskSummary>& desks) {
  json::array list;
  for (const DeskSummary& desk : desks) list.push_back(summary_reply(desk));
  return list;
}

json::object status_reply(const DeskStatus& status) {
  json::object object = summary_reply(status.summary);
  if (!status.network.empty()) object["network"] = status.network;
  if (!status.details) return object;
  object["usage"] = status.details->usage;
  json::array schedules;
  for (const auto& schedule : status.details->schedules) {
    schedules.push_back(json::object{{"name", schedule.name},
                                     {"next", schedule.next ? json::value(*schedule.next) : json::value(nullptr)}});
  }
  object["schedules"] = std::move(schedules);
  object["open_proposals"] = status.details->open_proposals;
  return object;
}

// The proposal without its content (the diff shows the change; the content can be large).
json::object proposal_reply(const tools::Proposal& proposal) {
  return {{"id", proposal.id},     {"desk", proposal.desk}, {"path", proposal.path},    {"reason", proposal.reason},
          {"diff", proposal.diff}, {"time", proposal.time}, {"status", proposal.status}};
}

json::object approval_reply(const ApprovalSummary& approval) {
  json::object object{{"id", approval.id},
                      {"desk", approval.desk},
                      {"api", approval.api},
                      {"method", approval.method},
                      {"url", approval.url},
                      {"summary", approval.summary},
                      {"sha256", approval.sha256},
                      {"rule", approval.rule},
                      {"asked_at", approval.asked_at},
                      {"expires_at", approval.expires_at},
                      {"expires_in_seconds", approval.expires_in_seconds}};
  if (!approval.decision.empty()) {
    object["decision"] = approval.decision;
    object["by"] = approval.by;
  }
  return object;
}

json::object ledger_reply(const LedgerReading& reading) {
  json::array lines;
  for (const auto& line : reading.lines) lines.emplace_back(line);
  json::object object{{"lines", std::move(lines)}};
  if (reading.verified) {
    object["verified"] = *reading.verified;
    object["verified_lines"] = reading.verified_lines;
    if (!reading.problem.empty()) object["problem"] = reading.problem;
  }
  return object;
}

json::object budget_reply(const desk::BudgetStatus& status) {
  json::object object{{"spent_usd", status.spent_usd},       {"spent_tokens", status.spent_tokens},
                      {"reserved_usd", status.reserved_usd}, {"reserved_tokens", status.reserved_tokens},
                      {"added_usd", status.added_usd},       {"resets", status.resets}};
  // A cap the desk does not have is absent, and so is what is left of it.
  if (status.caps.daily_usd) {
    const double cap = *status.caps.daily_usd + status.added_usd;
    object["daily_usd"] = cap;
    object["left_usd"] = std::max(0.0, cap - status.spent_usd - status.reserved_usd);
  }
  if (status.caps.daily_tokens) {
    const std::uint64_t used = status.spent_tokens + status.reserved_tokens;
    object["daily_tokens"] = *status.caps.daily_tokens;
    object["left_tokens"] = used >= *status.caps.daily_tokens ? 0 : *status.caps.daily_tokens - used;
  }
  if (status.caps.per_turn_usd) object["per_turn_usd"] = *status.caps.per_turn_usd;
  return object;
}

json::array names(const std::vector<std::string>& list) {
  json::array array;
  for (const auto& name : list) array.emplace_back(name);
  return array;
}

// --- handlers ---

template <typename Value, typename Build>
Result<json::object> reply(const char* field, Result<Value> value, Build build) {
  if (!value.ok()) return std::move(value).error();
  return json::object{{field, build(*value)}};
}

Result<json::object> answer_desks(ControlService& service, const ControlRequest&, const std::string&) {
  return json::object{{"desks", summaries_reply(service.desks())}};
}

Result<json::object> answer_status(ControlService& service, const ControlRequest& request, const std::string&) {
  if (!request.desk || request.desk->empty()) {
    const DaemonStatus status = service.daemon_status();
    return json::object{
        {"status",
         json::object{{"time", status.time}, {"stopping", status.stopping}, {"desks", summaries_reply(status.desks)}}}};
  }
  return reply("status", service.status(*request.desk), status_reply);
}

void answer_send(ControlService& service, const ControlRequest& request, const std::string& sender,
                 std::function<void(Result<json::object>)> done) {
  service.send(*request.desk, *request.text, sender, [done = std::move(done)](Result<std::string> sent) {
    done(reply("trigger", std::move(sent), [](const std::string& id) { return id; }));
  });
}

void answer_reload(ControlService& service, const ControlRequest&, const std::string& sender,
                   std::function<void(Result<json::object>)> done) {
  service.reload(sender, [done = std::move(done)](Result<ReloadOutcome> reloaded) {
    if (!reloaded.ok()) return done(std::move(reloaded).error());
    done(reload_reply(*reloaded));
  });
}

Result<json::object> answer_commands(ControlService& service, const ControlRequest& request, const std::string&) {
  return reply("commands", service.commands(*request.desk), [](const std::vector<desk::CommandEntry>& entries) {
    json::array list;
    for (const auto& entry : entries)
      list.push_back(json::object{{"name", entry.name}, {"description", entry.description}});
    return list;
  });
}

Result<json::object> answer_proposals(ControlService& service, const ControlRequest& request, const std::string&) {
  return reply("proposals", service.proposals(request.desk.value_or("")),
               [](const std::vector<tools::Proposal>& stored) {
                 json::array list;
                 for (const auto& proposal : stored) list.push_back(proposal_reply(proposal));
                 return list;
               });
}

Result<json::object> answer_accept(ControlService& service, const ControlRequest& request, const std::string& sender) {
  return reply("proposal", service.decide(*request.proposal, true, sender), proposal_reply);
}

Result<json::object> answer_reject(ControlService& service, const ControlRequest& request, const std::string& sender) {
  return reply("proposal", service.decide(*request.proposal, false, sender), proposal_reply);
}

Result<json::object> answer_approvals(ControlService& service, const ControlRequest& request, const std::string&) {
  return reply("approvals", service.approvals(request.desk.value_or("")),
               [](const std::vector<ApprovalSummary>& waiting) {
                 json::array list;
                 for (const auto& approval : waiting) list.push_back(approval_reply(approval));
                 return list;
               });
}

// Who decided is the peer as the server knows it (its uid and name), never what the client says.
Result<json::object> answer_approve(ControlService& service, const ControlRequest& request, const std::string& sender) {
  return reply("approval", service.decide_approval(*request.approval, true, sender), approval_reply);
}

Result<json::object> answer_deny(ControlService& service, const ControlRequest& request, const std::string& sender) {
  return reply("approval", service.decide_approval(*request.approval, false, sender), approval_reply);
}

void answer_ledger(ControlService& service, const ControlRequest& request, const std::string&,
                   std::function<void(Result<json::object>)> done) {
  service.ledger(*request.desk, request.since.value_or(""), request.verify,
                 [done = std::move(done)](Result<LedgerReading> reading) {
                   done(reply("ledger", std::move(reading), ledger_reply));
                 });
}

// Who raised a cap is the peer as the server knows it, as for approvals.
Result<json::object> answer_budget(ControlService& service, const ControlRequest& request, const std::string& sender) {
  return reply("budget", service.budget(*request.desk, request.add_usd, sender), budget_reply);
}

// The newest REFUSED events the daemon keeps (EventHistory), oldest first: read a page at a
// time, so that the walk never copies the whole history at once.
Result<json::object> answer_refusals(ControlService& service, const ControlRequest& request, const std::string&) {
  constexpr std::size_t kRefusalsShown = 200;
  constexpr std::size_t kPageBytes = std::size_t{1} << 20;
  std::deque<json::object> kept;
  std::optional<std::uint64_t> after;
  for (;;) {
    EventHistory::Replay page = service.replay(request.desk.value_or(""), after, kPageBytes);
    for (const desk::Event& event : page.events) {
      if (event.kind != desk::event_kind::kRefused) continue;
      kept.push_back(desk::to_json(event));
      if (kept.size() > kRefusalsShown) kept.pop_front();
    }
    if (!page.more || page.events.empty()) break;
    after = desk::event_sequence_number(page.events.back().id);
    if (!after) break;
  }
  json::array list;
  for (json::object& event : kept) list.push_back(std::move(event));
  return json::object{{"refusals", std::move(list)}};
}

json::object day_reply(const desk::DailyUsage& day) {
  json::object models;
  std::uint64_t requests = 0;
  std::uint64_t tokens = 0;
  double cost = 0;
  bool cost_known = true;
  for (const auto& [name, usage] : day.models) {
    json::object model{{"requests", usage.requests},
                       {"input_tokens", usage.tokens.input_tokens},
                       {"output_tokens", usage.tokens.output_tokens},
                       {"cache_read_tokens", usage.tokens.cache_read_tokens},
                       {"cache_write_tokens", usage.tokens.cache_write_tokens},
                       {"unreported_requests", usage.unreported_requests}};
    if (usage.cost_usd) model["cost_usd"] = *usage.cost_usd;
    if (!usage.priced_as.empty()) model["priced_as"] = usage.priced_as;
    models[name] = std::move(model);
    requests += usage.requests;
    tokens += usage.tokens.input_tokens + usage.tokens.output_tokens + usage.tokens.cache_read_tokens +
              usage.tokens.cache_write_tokens;
    if (usage.cost_usd) cost += *usage.cost_usd;
    cost_known = cost_known && usage.cost_usd.has_value();
  }
  json::object object{{"date", desk::iso_date(day.date)}, {"requests", requests}, {"tokens", tokens},
                      {"models", std::move(models)}};
  // A day with a model of no price has no total: a part would read as the whole.
  if (cost_known) object["cost_usd"] = cost;
  return object;
}

json::array spend_reply(const std::vector<DeskSpend>& desks) {
  json::array list;
  for (const DeskSpend& spend : desks) {
    json::array days;
    for (const desk::DailyUsage& day : spend.days) days.push_back(day_reply(day));
    list.push_back(json::object{{"desk", spend.desk}, {"running", spend.running}, {"days", std::move(days)}});
  }
  return list;
}

Result<json::object> answer_spend(ControlService& service, const ControlRequest& request, const std::string&) {
  return reply("desks", service.spend(request.desk.value_or("")), spend_reply);
}

// The same text as the web server's /metrics, in one field.
Result<json::object> answer_metrics(ControlService& service, const ControlRequest&, const std::string&) {
  return json::object{{"metrics", service.metrics_text()}};
}

// The link holds a one-time login code: a secret for whoever asked, never logged.
Result<json::object> answer_web_url(ControlService& service, const ControlRequest&, const std::string&) {
  auto link = service.web_url();
  if (!link.ok()) return std::move(link).error();
  return json::object{{"url", link->url}, {"expires_in_seconds", link->expires_in_seconds}};
}

// clang-format off
// In the protocol's order (a test checks that the two lists agree).
constexpr ControlOp kOperations[] = {
    {op::kDesks,     OpAnswer::now,      answer_desks,     nullptr},
    {op::kStatus,    OpAnswer::now,      answer_status,    nullptr},
    {op::kSend,      OpAnswer::later,    nullptr,          answer_send},
    {op::kFollow,    OpAnswer::follow,   nullptr,          nullptr},
    {op::kUnfollow,  OpAnswer::unfollow, nullptr,          nullptr},
    {op::kCommands,  OpAnswer::now,      answer_commands,  nullptr},
    {op::kProposals, OpAnswer::now,      answer_proposals, nullptr},
    {op::kAccept,    OpAnswer::now,      answer_accept,    nullptr},
    {op::kReject,    OpAnswer::now,      answer_reject,    nullptr},
    {op::kReload,    OpAnswer::later,    nullptr,          answer_reload},
    {op::kApprovals, OpAnswer::now,      answer_approvals, nullptr},
    {op::kApprove,   OpAnswer::now,      answer_approve,   nullptr},
    {op::kDeny,      OpAnswer::now,      answer_deny,      nullptr},
    {op::kLedger,    OpAnswer::later,    nullptr,          answer_ledger},
    {op::kBudget,    OpAnswer::now,      answer_budget,    nullptr},
    {op::kRefusals,  OpAnswer::now,      answer_refusals,  nullptr},
    {op::kMetrics,   OpAnswer::now,      answer_metrics,   nullptr},
    {op::kSpend,     OpAnswer::now,      answer_spend,     nullptr},
    {op::kWebUrl,    OpAnswer::now,      answer_web_url,   nullptr, true},
};
// clang-format on

}  // namespace

std::span<const ControlOp> control_ops() { return kOperations; }

const ControlOp* find_control_op(std::string_view name) {
  const auto* found = std::find_if(std::begin(kOperations), std::end(kOperations),
                                   [&](const ControlOp& row) { return row.operation.name == name; });
  return found == std::end(kOperations) ? nullptr : found;
}

json::object reload_reply(const ReloadOutcome& outcome) {
  json::object failed;
  for (const auto& [name, why] : outcome.failed) failed[name] = why;
  return {{"reload", json::object{{"started", names(outcome.started)},
                                  {"stopped", names(outcome.stopped)},
                                  {"restarted", names(outcome.restarted)},
                                  {"kept", names(outcome.kept)},
                                  {"failed", std::move(failed)}}}};
}

}  // namespace deskd::control
