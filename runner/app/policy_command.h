#pragma once
// `deskd policy`: answers, for one path, what a desk's file tools would be allowed to do.

#include <span>
#include <string_view>

namespace deskd::app {

/// Runs `deskd policy ARGS...` (arguments after the word "policy"). Prints "allowed: <path>"
/// and returns 0, prints "refused: <sentence>" and returns 1, or prints usage and returns 2.
int run_policy_command(std::span<const std::string_view> arguments);

/// The usage text of `deskd policy`.
extern const char* const kPolicyUsage;

}  // namespace deskd::app
