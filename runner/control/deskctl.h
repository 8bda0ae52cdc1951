#pragma once
// deskctl: the command-line client of a running deskd.

#include <span>
#include <string_view>

namespace deskd::control {

extern const char* const kDeskctlUsage;

/// Runs deskctl with `arguments` (argv without the program name); returns the exit status:
/// 0 ok, 1 refused by deskd or the turn failed, 2 bad usage, 3 cannot reach deskd, 4 the
/// turn `ask` followed finished with its reply cut by a limit.
int run_deskctl(std::span<const std::string_view> arguments);

}  // namespace deskd::control
