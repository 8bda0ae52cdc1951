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
