#pragma once
// Internal to runner/deskctl: the one table of deskctl's commands. Each row is a command's
// word and --help line, the control operation it asks for, what it takes on the command line
// (and sends as which request fields), and how its reply is printed. The parser
// (deskctl_command_line.cpp) and the dispatcher (deskctl.cpp) read only the table, so a new
// control operation is one row here (with print_reply_fields when it needs no printer of its
// own), besides its rows in the protocol and in the server's table.

#include <boost/json/object.hpp>

#include <span>
#include <string_view>

#include "runner/control_protocol/control_protocol.h"
#include "runner/deskctl/control_client.h"
#include "runner/deskctl/deskctl.h"

namespace CLI {
class App;
}  // namespace CLI

namespace deskd::control::deskctl {

/// What a command takes on its command line, and sends as which request fields.
enum class Takes {
  nothing,
  desk_or_every_desk,  ///< [DESK], sent as "desk" when given
  desk,                ///< DESK, sent as "desk"
  desk_and_message,    ///< DESK TEXT..., sent as "desk" and "text"
  proposal,            ///< PROPOSAL_ID, sent as "proposal"
  approval,            ///< APPROVAL_ID, sent as "approval"
};

struct Command {
  std::string_view name;         ///< deskctl's word for it
  std::string_view description;  ///< its line in `deskctl --help`
  Operation op;                  ///< what it asks deskd
  Takes takes;
  /// For a command of one request and its reply: the reply, printed; returns the exit status.
  int (*print)(const boost::json::object& reply);
  /// For a command that follows events instead (ask, events): the whole conversation.
  int (*converse)(ControlClient& client, const DeskctlRequest& options);
  /// Options of its own beyond what it takes, or nullptr.
  void (*add_options)(CLI::App& command, DeskctlRequest& options);
};

/// Every command, in the order `deskctl --help` lists them.
std::span<const Command> commands();
/// The command called `name`, or nullptr.
const Command* find_command(std::string_view name);

/// events' --follow and --from (deskctl_command_line.cpp).
void add_events_options(CLI::App& command, DeskctlRequest& options);
/// ledger's --since and --verify (deskctl_command_line.cpp), sent as "since" and "verify".
void add_ledger_options(CLI::App& command, DeskctlRequest& options);
/// budget's --add (deskctl_command_line.cpp), sent as "add_usd".
void add_budget_options(CLI::App& command, DeskctlRequest& options);

}  // namespace deskd::control::deskctl
