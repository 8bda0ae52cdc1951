#pragma once
// What `deskd shell` and `deskd mcp` share: the options that describe a desk's tools (its
// folder, sandbox, bash limits, proposals folder), and running a command's coroutine on
// its event loop with SIGINT/SIGTERM/SIGHUP ending it cleanly.

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

/// The settings for make_desk_tools(). Refuses options without --desk, and whatever
/// building the sandbox or opening the proposals folder refuses.
Result<tools::DeskToolSettings> build_desk_tool_settings(const DeskToolOptions& options);

/// For --net allowlist: gives `settings`' sandbox an egress proxy on `executor` that writes
/// each refusal to standard error ("deskd: network refused HOST:PORT: WHY"). Nothing for
/// the other modes.
Result<void> attach_command_egress(tools::DeskToolSettings& settings, const DeskToolOptions& options,
                                   boost::asio::any_io_executor executor);

/// Runs `main` on `io` until it ends, and returns the status it returns. The first SIGINT,
/// SIGTERM or SIGHUP calls `on_signal` (which should make `main` end soon) and makes the
/// status 128 + the signal's number. Ignores SIGPIPE: a reader that went away is an error
/// to handle, not a reason to die. Everything `main` started must have ended for this to
/// return, so what it used may be destroyed afterwards, before `io`.
int run_until_done(boost::asio::io_context& io, boost::asio::awaitable<int> main, std::function<void()> on_signal);

}  // namespace deskd::app
