#include "runner/deskctl/deskctl.h"

#include <boost/json.hpp>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "base/command_line.h"
#include "runner/control_protocol/control_protocol.h"
#include "runner/deskctl/control_client.h"
#include "runner/deskctl/deskctl_commands.h"
#include "runner/deskctl/deskctl_output.h"

namespace deskd::control {

namespace json = boost::json;

namespace {

// The request a one-reply command sends: its operation and, as its row says, the fields
// taken from its command line.
json::object request_for(const deskctl::Command& command, const DeskctlRequest& options) {
  json::object request{{field::kOp, command.op.name}};
  switch (command.takes) {
    case deskctl::Takes::nothing: break;
    case deskctl::Takes::desk_or_every_desk:
      if (!options.desk.empty()) request[field::kDesk] = options.desk;
      break;
    case deskctl::Takes::desk: request[field::kDesk] = options.desk; break;
    case deskctl::Takes::desk_and_message:
      request[field::kDesk] = options.desk;
      request[field::kText] = deskctl::joined(options.words);
      break;
    case deskctl::Takes::proposal: request[field::kProposal] = options.desk; break;
    case deskctl::Takes::approval: request[field::kApproval] = options.desk; break;
  }
  // Options only some commands have (ledger's, budget's): absent unless given.
  if (!options.since.empty()) request[field::kSince] = options.since;
  if (options.verify) request[field::kVerify] = true;
  if (options.add_usd) request[field::kAddUsd] = *options.add_usd;
  return request;
}

// A command of one request and its reply: the reply printed by the command's printer (or
// as it came, with --json).
int one_reply(ControlClient& client, const deskctl::Command& command, const DeskctlRequest& options) {
  auto reply = client.call(request_for(command, options));
  if (!reply.ok()) return deskctl::unreachable(reply.error());
  if (!deskctl::is_ok(*reply)) return deskctl::refused(*reply, options.json_output);
  if (options.json_output) {
    std::puts(json::serialize(*reply).c_str());
    return deskctl::kOk;
  }
  return command.print(*reply);
}

}  // namespace

int run_deskctl(std::span<const std::string_view> arguments) {
  DeskctlRequest options;
  auto parser = make_deskctl_parser(options);
  if (auto status = parse_command_line(*parser, std::vector<std::string>(arguments.begin(), arguments.end()))) {
    return *status;
  }
  const deskctl::Command* command = deskctl::find_command(options.command);
  if (command == nullptr) {
    std::fputs("deskctl: give a command.\nRun 'deskctl --help' for usage.\n", stderr);
    return deskctl::kUsage;
  }
  auto client = ControlClient::connect(options.socket);
  if (!client.ok()) return deskctl::unreachable(client.error());
  return command->converse != nullptr ? command->converse(*client, options) : one_reply(*client, *command, options);
}

}  // namespace deskd::control
