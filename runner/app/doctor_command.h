#pragma once
// `deskd doctor`: says which isolation this host offers deskd's sandbox, with the fix for
// each missing piece, and whether the host leaves the desk uid range to deskd.

#include <span>
#include <string_view>

namespace deskd::app {

/// Runs `deskd doctor ARGS...` (arguments after the word "doctor"): prints one line per
/// check (or, with --json, a JSON array of the checks) and a verdict. With --config F the
/// desk uid range is F's (its desks' own running processes excepted), else the default.
/// Returns 0 when a full sandbox can start on this host, 1 when it cannot, 2 for bad usage
/// or a config with problems (which are printed).
int run_doctor_command(std::span<const std::string_view> arguments);

/// The usage text of `deskd doctor`.
extern const char* const kDoctorUsage;

}  // namespace deskd::app
