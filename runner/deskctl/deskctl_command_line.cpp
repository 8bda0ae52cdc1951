// deskctl's command line, parsed by CLI11 so that `deskctl --help` and each command's
// --help are written from what is really accepted.

#include <cstdlib>

#include "base/command_line.h"
#include "runner/deskctl/deskctl.h"
#include "runner/deskctl/deskctl_commands.h"

namespace deskd::control {
namespace {

constexpr const char* kDeskctlFooter =
    "What a desk wrote (output, names, paths, reasons, diffs, errors) is shown, never\n"
    "obeyed: escape sequences and control, bidi and invisible characters come out as\n"
    "\\e, \\xNN, \\uXXXX; a path holding anything unusual is quoted as bash reads it\n"
    "('a b', $'a\\nb'), and one holding a look-alike of '/' is marked. A message that\n"
    "starts with '-' goes after --.\n"
    "\n"
    "Exit statuses: 0 ok, 1 refused by deskd (or the turn failed), 2 bad usage,\n"
    "3 cannot reach deskd, 4 the turn finished with its reply cut (max_tokens, context).\n"
    "Run 'deskctl COMMAND --help' for a command's own arguments.";

CLI::App* add_command(CLI::App& deskctl, DeskctlRequest& request, const std::string& name,
                      const std::string& description) {
  auto* command = deskctl.add_subcommand(name, description);
  command->final_callback([&request, name] { request.command = name; });
  return command;
}

void add_desk(CLI::App& command, DeskctlRequest& request, const std::string& description, bool required) {
  auto* option = command.add_option("desk", request.desk, description)->type_name("DESK");
  if (required) option->required();
}

void add_message(CLI::App& command, DeskctlRequest& request) {
  command.add_option("text", request.words, "the message, in one or more words")->type_name("TEXT")->required();
}

}  // namespace

void deskctl::add_events_options(CLI::App& events, DeskctlRequest& request) {
  events.add_flag("-f,--follow", request.follow, "go on with new events as they happen");
  events.add_option("--from", request.from, "only the events after EVENT_ID")
      ->type_name("EVENT_ID")
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
}

void deskctl::add_ledger_options(CLI::App& ledger, DeskctlRequest& request) {
  ledger
      .add_option("--since", request.since,
                   "only the lines from WHEN on: a day (2026-12-01) or a time (2026-12-01T09:15:00+05:30), India time")
      ->type_name("WHEN")
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  ledger.add_flag(
      "--verify", request.verify,
      "verify the whole chain too: prints 'ledger intact: N lines', or the first problem and exit status 1");
}

void deskctl::add_budget_options(CLI::App& budget, DeskctlRequest& request) {
  budget
      .add_option("--add", request.add_usd,
                  "raise today's daily_usd cap by USD (a positive amount) until India midnight; kept across a restart")
      ->type_name("USD")
      ->check(CLI::PositiveNumber)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
}

std::unique_ptr<CLI::App> make_deskctl_parser(DeskctlRequest& request) {
  const char* from_environment = std::getenv("DESKD_SOCKET");
  request.socket = from_environment != nullptr && *from_environment != '\0' ? from_environment : "/run/deskd/deskd.sock";
  auto deskctl = make_command_line_parser("Talks to a running deskd.", "deskctl");
  deskctl->footer(kDeskctlFooter);
  deskctl->require_subcommand(1, 1);
  deskctl
      ->add_option("--socket", request.socket,
                   "deskd's control socket (default: $DESKD_SOCKET, else /run/deskd/deskd.sock)")
      ->type_name("PATH")
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  deskctl->add_flag("--json", request.json_output,
                    "print deskd's replies and events as JSON lines, for scripts (exact: nothing escaped beyond "
                    "JSON's own escapes)");

  // Each command as deskctl's table (deskctl_commands.cpp) says: its word, its --help line,
  // what it takes.
  for (const deskctl::Command& row : deskctl::commands()) {
    CLI::App* command = add_command(*deskctl, request, std::string(row.name), std::string(row.description));
    switch (row.takes) {
      case deskctl::Takes::nothing: break;
      case deskctl::Takes::desk_or_every_desk:
        add_desk(*command, request, "the desk (default: every desk)", false);
        break;
      case deskctl::Takes::desk: add_desk(*command, request, "the desk", true); break;
      case deskctl::Takes::desk_and_message:
        add_desk(*command, request, "the desk", true);
        add_message(*command, request);
        break;
      case deskctl::Takes::proposal:
        command->add_option("proposal", request.desk, "the proposal's id")->type_name("PROPOSAL_ID")->required();
        break;
      case deskctl::Takes::approval:
        command->add_option("approval", request.desk, "the waiting call's id (ap-...), as deskctl approvals lists it")
            ->type_name("APPROVAL_ID")
            ->required();
        break;
    }
    if (row.add_options != nullptr) row.add_options(*command, request);
  }
  return deskctl;
}

}  // namespace deskd::control
