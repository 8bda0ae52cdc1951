#pragma once
// What `deskd run`, `deskd shell` and `deskd mcp` share: the options that describe a desk
// (its folder, sandbox, bash limits, proposals folder), turned into the desk the daemon's
// one assembly takes, and running a command's coroutine on its event loop with
// SIGINT/SIGTERM/SIGHUP ending it cleanly.

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>

#include <cstddef>
#include <filesystem>
#include <functional>
#include <optional>
#include <span>
#include <string_view>

#include "base/result.h"
#include "runner/app/sandbox_options.h"
#include "runner/config/config.h"
#include "runner/daemon/desk_ids.h"
#include "runner/egress/egress_proxy.h"
#include "runner/tools/desk_tools.h"

namespace boost::asio {
class io_context;
}  // namespace boost::asio

namespace deskd::app {

struct DeskToolOptions {
  SandboxOptions sandbox;
  double timeout_seconds = 120;
  std::size_t maximum_output_characters = 20000;
  std::optional<std::filesystem::path> proposals_folder;
};

/// Like take_sandbox_option(), for the sandbox options plus --timeout SECONDS,
/// --max-output CHARS and --proposals DIR.
Result<bool> take_desk_tool_option(std::span<const std::string_view> arguments, std::size_t& index,
                                   DeskToolOptions& options);

/// The desk the ad-hoc commands (run, shell, mcp) describe with their options, as the one
/// desk assembly (runner/daemon/desk_assembly.h) takes a desk: named after its folder, with
/// the options' sandbox settings and hidden paths, no disk quota (the daemon's alone), and
/// under a root deskd the ad-hoc ids (sandbox::kAdHocDeskUid unless --uid/--gid say
/// otherwise) — never a served desk's folder. Refuses options without --desk.
struct CommandDesk {
  DeskConfig desk;
  std::optional<DeskIds> ids;
};
Result<CommandDesk> command_desk(const DeskToolOptions& options);

/// Each refusal of a command's egress proxy on standard error:
/// "deskd: network refused HOST:PORT: WHY".
egress::RefusalSink refusals_to_standard_error();

/// The settings for make_desk_tools(): the desk's sandbox as the assembly makes it (under
/// --net allowlist with its egress proxy on `executor`), and the --proposals store. Refuses
/// what command_desk(), the assembly or opening the proposals folder refuse.
Result<tools::DeskToolSettings> build_desk_tool_settings(const DeskToolOptions& options,
                                                         boost::asio::any_io_executor executor);

/// Runs `main` on `io` until it ends, and returns the status it returns. The first SIGINT,
/// SIGTERM or SIGHUP calls `on_signal` (which should make `main` end soon) and makes the
/// status 128 + the signal's number. Ignores SIGPIPE: a reader that went away is an error
/// to handle, not a reason to die. Everything `main` started must have ended for this to
/// return, so what it used may be destroyed afterwards, before `io`.
int run_until_done(boost::asio::io_context& io, boost::asio::awaitable<int> main, std::function<void()> on_signal);

}  // namespace deskd::app
