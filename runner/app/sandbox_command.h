#pragma once
// `deskd sandbox`: a one-shot run of a command in a full desk sandbox, like bwrap.

#include <span>
#include <string>
#include <string_view>

namespace deskd::app {

/// Runs `deskd sandbox ARGS...`. Returns the command's exit status, 125 when the sandbox
/// cannot be set up, 126/127 when the command cannot be executed or found, 2 for bad usage.
/// `describe_seccomp` gives the text of --print-seccomp (sandbox::describe_seccomp_profile):
/// deskd-full passes it; the lean deskd passes none, so as not to load libseccomp, and
/// leaves --print-seccomp to deskd-full (sandbox_asks_for_seccomp_text).
int run_sandbox_command(std::span<const std::string_view> arguments, std::string (*describe_seccomp)());

/// True when `deskd sandbox ARGUMENTS...` asks for --print-seccomp (before the command).
bool sandbox_asks_for_seccomp_text(std::span<const std::string_view> arguments);

/// The usage text of `deskd sandbox`.
std::string sandbox_usage();

}  // namespace deskd::app
