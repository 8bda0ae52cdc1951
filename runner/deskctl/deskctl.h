#pragma once
// deskctl: the command-line client of a running deskd.

#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace CLI {
class App;
}  // namespace CLI

namespace deskd::control {

/// What deskctl's command line asks for.
struct DeskctlRequest {
  std::filesystem::path socket;  ///< --socket, else $DESKD_SOCKET, else /run/deskd/deskd.sock
  bool json_output = false;
  std::string command;             ///< desks, status, send, ask, events, commands, ...
  std::string desk;                ///< the DESK, PROPOSAL_ID or APPROVAL_ID, empty when not given
  std::vector<std::string> words;  ///< the message of send and ask
  bool follow = false;             ///< events --follow
  std::string from;                ///< events --from
  std::string since;               ///< ledger --since
  bool verify = false;             ///< ledger --verify
  std::optional<double> add_usd;   ///< budget --add
};

/// deskctl's parser, filling `request` (whose socket it sets to the default first). Its
/// --help is the usage; every command is a subcommand.
std::unique_ptr<CLI::App> make_deskctl_parser(DeskctlRequest& request);

/// Runs deskctl with `arguments` (argv without the program name); returns the exit status:
/// 0 ok, 1 refused by deskd or the turn failed, 2 bad usage, 3 cannot reach deskd, 4 the
/// turn `ask` followed finished with its reply cut by a limit.
int run_deskctl(std::span<const std::string_view> arguments);

}  // namespace deskd::control
