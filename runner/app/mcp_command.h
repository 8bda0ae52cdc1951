#pragma once
// `deskd mcp`: a desk's tools as a Model Context Protocol server on standard input and
// output, so any MCP client can use the desk's sandbox as its shell.

#include <span>
#include <string_view>

namespace deskd::app {

/// Runs `deskd mcp ARGS...`. Returns 0 at the end of input, 1 when the replies could not
/// be written, 2 for bad usage or a desk that cannot be set up, 128+N after signal N.
int run_mcp_command(std::span<const std::string_view> arguments);

}  // namespace deskd::app
