// deskctl's command line, parsed by CLI11 so that `deskctl --help` and each command's
// --help are written from what is really accepted.

#include <cstdlib>

#include "base/command_line.h"
#include "runner/deskctl/deskctl.h"

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

  add_command(*deskctl, request, "desks", "list the desks and what each is doing");
  add_desk(*add_command(*deskctl, request, "status", "a desk's status (every desk's without DESK)"), request,
           "the desk (default: every desk)", false);
  auto* send = add_command(*deskctl, request, "send", "give a desk a message or a /command; prints the trigger id");
  add_desk(*send, request, "the desk", true);
  add_message(*send, request);
  auto* ask = add_command(*deskctl, request, "ask",
                          "send, then show the turn (model text, tool calls, results) until it ends; exit status 0 "
                          "when it finished, 4 when it finished but its reply was cut by a limit, 1 otherwise");
  add_desk(*ask, request, "the desk", true);
  add_message(*ask, request);
  auto* events = add_command(*deskctl, request, "events", "the events deskd keeps");
  add_desk(*events, request, "the desk (default: every desk)", false);
  events->add_flag("-f,--follow", request.follow, "go on with new events as they happen");
  events->add_option("--from", request.from, "only the events after EVENT_ID")
      ->type_name("EVENT_ID")
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  add_desk(*add_command(*deskctl, request, "commands", "the desk's commands and skills"), request, "the desk", true);
  add_desk(*add_command(*deskctl, request, "proposals", "changes desks proposed to files they may not write"), request,
           "the desk (default: every desk)", false);
  for (const char* decision : {"accept", "reject"}) {
    auto* command = add_command(*deskctl, request, decision,
                                std::string_view(decision) == "accept" ? "write a proposed change to its file"
                                                                       : "turn a proposed change down");
    command->add_option("proposal", request.desk, "the proposal's id")->type_name("PROPOSAL_ID")->required();
  }
  add_command(*deskctl, request, "reload",
              "make deskd read its config again; prints which desks were started, stopped, restarted or kept, or "
              "every problem of a config it refused (the running one is kept); exit status 1 when refused or a "
              "desk could not start");
  return deskctl;
}

}  // namespace deskd::control
