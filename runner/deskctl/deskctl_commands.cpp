#include "runner/deskctl/deskctl_commands.h"

#include <algorithm>

#include "runner/deskctl/deskctl_follow.h"
#include "runner/deskctl/deskctl_output.h"

namespace deskd::control::deskctl {

namespace {

// clang-format off
constexpr Command kCommands[] = {
    {"desks", "list the desks and what each is doing",
     op::kDesks, Takes::nothing, print_desks_reply, nullptr, nullptr},
    {"status", "a desk's status (every desk's without DESK)",
     op::kStatus, Takes::desk_or_every_desk, print_status_reply, nullptr, nullptr},
    {"send", "give a desk a message or a /command; prints the trigger id",
     op::kSend, Takes::desk_and_message, print_trigger_reply, nullptr, nullptr},
    {"ask", "send, then show the turn (model text, tool calls, results) until it ends; exit status 0 when it "
            "finished, 4 when it finished but its reply was cut by a limit, 1 otherwise",
     op::kSend, Takes::desk_and_message, nullptr, ask, nullptr},
    {"events", "the events deskd keeps",
     op::kFollow, Takes::desk_or_every_desk, nullptr, events, add_events_options},
    {"commands", "the desk's commands and skills",
     op::kCommands, Takes::desk, print_commands_reply, nullptr, nullptr},
    {"proposals", "changes desks proposed to files they may not write",
     op::kProposals, Takes::desk_or_every_desk, print_proposals_reply, nullptr, nullptr},
    {"accept", "write a proposed change to its file",
     op::kAccept, Takes::proposal, print_decision_reply, nullptr, nullptr},
    {"reject", "turn a proposed change down",
     op::kReject, Takes::proposal, print_decision_reply, nullptr, nullptr},
    {"reload", "make deskd read its config again; prints which desks were started, stopped, restarted or kept, or "
               "every problem of a config it refused (the running one is kept); exit status 1 when refused or a "
               "desk could not start",
     op::kReload, Takes::nothing, print_reload_reply, nullptr, nullptr},
    {"approvals", "API calls desks made that wait for a person's approval (every desk's without DESK)",
     op::kApprovals, Takes::desk_or_every_desk, print_approvals_reply, nullptr, nullptr},
    {"approve", "let one waiting API call through, once: the exact request its id names",
     op::kApprove, Takes::approval, print_approval_decision_reply, nullptr, nullptr},
    {"deny", "refuse a waiting API call (the desk gets a 403 saying so)",
     op::kDeny, Takes::approval, print_approval_decision_reply, nullptr, nullptr},
    {"ledger", "a desk's API ledger: every gated call, one JSON line each, newest last; with --verify, checks its "
               "hash chain too (exit status 1 when a line was edited, removed or moved)",
     op::kLedger, Takes::desk, print_ledger_reply, nullptr, add_ledger_options},
    {"budget", "a desk's spend caps today: each cap, spent, reserved by calls under way, left, and when the daily "
               "caps reset; with --add USD, first raises today's daily_usd cap by USD for the rest of the India day",
     op::kBudget, Takes::desk, print_budget_reply, nullptr, add_budget_options},
    {"refusals", "what the desk's enforcers refused lately (system calls, paths, hosts, API calls, limits), "
                 "newest last (every desk's without DESK)",
     op::kRefusals, Takes::desk_or_every_desk, print_refusals_reply, nullptr, nullptr},
    {"spend", "what the desk's models used by India day (requests, tokens, cost), newest last, with the last day's "
              "split by model (every desk's without DESK)",
     op::kSpend, Takes::desk_or_every_desk, print_spend_reply, nullptr, nullptr},
    {"metrics", "deskd's metrics in the Prometheus text format, as the web server's /metrics serves them",
     op::kMetrics, Takes::nothing, print_metrics_reply, nullptr, nullptr},
    {"web-url", "a one-time login link for deskd's web page on [runner] web_listen, good for one login within "
                "5 minutes (only root and deskd's own user may ask)",
     op::kWebUrl, Takes::nothing, print_web_url_reply, nullptr, nullptr},
};
// clang-format on

}  // namespace

std::span<const Command> commands() { return kCommands; }

const Command* find_command(std::string_view name) {
  const auto* found = std::find_if(std::begin(kCommands), std::end(kCommands),
                                   [&](const Command& command) { return command.name == name; });
  return found == std::end(kCommands) ? nullptr : found;
}

}  // namespace deskd::control::deskctl
