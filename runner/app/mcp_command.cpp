#include "runner/app/mcp_command.h"

#include <fcntl.h>

#include <boost/asio.hpp>

#include <charconv>
#include <chrono>
#include <cstdio>
#include <optional>
#include <string>

#include "base/command_line.h"
#include "runner/app/command_options.h"
#include "runner/app/desk_tool_options.h"
#include "runner/mcp/mcp_server.h"

#ifndef DESKD_VERSION
#define DESKD_VERSION "0"
#endif

namespace deskd::app {
namespace {

constexpr const char* kMcpDescription =
    "Serves the desk's tools (bash, bash_background, check_background, bash_restart,\n"
    "read_file, write_file, edit_file, list_directory, propose_file_change) as a Model\n"
    "Context Protocol server on standard input and output: JSON-RPC 2.0, one message a line.\n"
    "Protocol revisions 2025-06-18 and 2025-11-25 after initialize (an older client is answered\n"
    "2025-11-25 and decides whether it can go on), and 2026-07-28 without a handshake on every\n"
    "request that names it in _meta[\"io.modelcontextprotocol/protocolVersion\"] (another\n"
    "modern revision is refused with -32022, naming the ones spoken); server/discover says\n"
    "which. bash runs in the desk's sandbox; the file tools follow the same confinement. Logs\n"
    "go to standard error only.\n"
    "\n"
    "Arguments are checked against each tool's inputSchema: from 2025-11-25 on, arguments at\n"
    "fault are a tool result with isError that names them (the model can correct the call);\n"
    "under 2025-06-18 they are -32602. An unknown tool is -32602 in every revision.\n"
    "A result's text is the whole answer; its structuredContent repeats it, with is_error.\n"
    "notifications/cancelled stops the call it names, a running command included, and that\n"
    "call gets no reply. A call whose _meta carries a progressToken hears\n"
    "notifications/progress while it runs. Ids come back exactly as sent; no error carries\n"
    "a null id: a line whose id cannot be known is logged here on standard error, and\n"
    "answered without an id only under 2025-11-25 or later.\n"
    "\n"
    "End of input: from a file, every request is answered first; from a pipe or a socket\n"
    "(the client hung up) the calls under way are stopped at once and deskd exits.\n"
    "\n"
    "Exit status: 0 at the end of input; 1 if replies cannot be written; 2 for bad usage\n"
    "or a desk that cannot be set up; 128+N after signal N.";

// 0.05 to 3600 seconds, as milliseconds.
std::optional<std::chrono::milliseconds> parse_interval(std::string_view text) {
  double seconds = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), seconds);
  if (error != std::errc() || end != text.data() + text.size() || !(seconds >= 0.05 && seconds <= 3600)) {
    return std::nullopt;
  }
  return std::chrono::milliseconds(static_cast<long long>(seconds * 1000));
}

int serve_mcp(const DeskToolOptions& options, std::chrono::milliseconds progress_interval) {
  UniqueFd input = duplicate_descriptor(0);
  UniqueFd output = duplicate_descriptor(1);
  if (!input || !output) {
    std::fputs("deskd mcp: standard input and output must be open.\n", stderr);
    return 2;
  }

  boost::asio::io_context io;
  auto settings = build_desk_tool_settings(options, io.get_executor());
  if (!settings.ok()) return usage_error("mcp", settings.error().what);
  tools::ToolRegistry registry = tools::make_desk_tools(io.get_executor(), std::move(*settings));
  tools::McpServer server(registry, tools::McpServerInfo{"deskd", DESKD_VERSION}, progress_interval);
  auto serve = [&]() -> boost::asio::awaitable<int> {
    const bool written = co_await server.serve(io.get_executor(), std::move(input), std::move(output));
    co_await registry.close();
    if (!written) std::fputs("deskd mcp: the replies could not be written; the client went away.\n", stderr);
    co_return written ? 0 : 1;
  };
  return run_until_done(io, serve(), [&] {
    server.stop();
    // Ends a running command at once, so the server is not kept waiting for it.
    boost::asio::co_spawn(io, registry.close(), [](std::exception_ptr escaped) {
      if (escaped) std::fputs("deskd mcp: closing the tools failed\n", stderr);
    });
  });
}

}  // namespace

DeskdCommand add_mcp_command(CLI::App& deskd) {
  auto* command = deskd.add_subcommand("mcp", "serve a desk's tools as a Model Context Protocol server on stdio");
  command->footer(kMcpDescription);
  struct Options {
    DeskToolOptions tools;
    std::chrono::milliseconds progress_interval = tools::McpServer::kDefaultProgressInterval;
  };
  auto options = std::make_shared<Options>();
  add_desk_tool_options(*command, options->tools);
  command
      ->add_option_function<std::string>(
          "--progress-interval",
          [options](const std::string& text) {
            const auto interval = parse_interval(text);
            if (!interval)
              throw CLI::ValidationError("--progress-interval needs a number of seconds from 0.05 to 3600");
            options->progress_interval = *interval;
          },
          "how often a running call reports progress (default 5)")
      ->type_name("SECONDS")
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  return {command, [options] { return serve_mcp(options->tools, options->progress_interval); }};
}

}  // namespace deskd::app
