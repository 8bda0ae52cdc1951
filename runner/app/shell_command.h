#pragma once
// `deskd shell`: a person types commands into a desk's sandboxed bash and sees their output
// and status; with --json, a script drives any of the desk's tools, one JSON object a line.

#include <span>
#include <string_view>

namespace deskd::app {

/// Runs `deskd shell ARGS...`. Returns 0 at the end of input, 1 when output cannot be
/// written, 2 for bad usage or a desk that cannot be set up, 128+N after signal N.
int run_shell_command(std::span<const std::string_view> arguments);

}  // namespace deskd::app
