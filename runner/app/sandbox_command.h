#pragma once
// `deskd sandbox`: a one-shot run of a command in a full desk sandbox, like bwrap.

#include <span>
#include <string>
#include <string_view>

namespace deskd::app {

/// Runs `deskd sandbox ARGS...`. Returns the command's exit status, 125 when the sandbox
/// cannot be set up, 126/127 when the command cannot be executed or found, 2 for bad usage.
int run_sandbox_command(std::span<const std::string_view> arguments);

/// The usage text of `deskd sandbox`.
std::string sandbox_usage();

}  // namespace deskd::app
