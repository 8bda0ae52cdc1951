#pragma once
// The sandbox options that `deskd sandbox`, `deskd shell` and `deskd mcp` share — the desk
// folder and the flags of the sandbox key table (sandbox/sandbox_keys.h) — parsed one
// argument at a time so that each command keeps its own options beside them, and turned
// into a SandboxSpec the same way everywhere.

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "sandbox/sandbox_spec.h"

namespace deskd::app {

struct SandboxOptions {
  std::optional<std::filesystem::path> desk_directory;
  std::vector<std::filesystem::path> hidden_paths;  ///< Absolute (relative ones start at the current folder).
  sandbox::SandboxSettings settings;                ///< Everything else, as the config states it too.
};

/// The usage lines of every option but --desk, whose wording differs between commands:
/// the flags of sandbox/sandbox_keys.h.
std::string sandbox_options_help();

/// If arguments[index] is a sandbox option, stores it and its value in `options`, leaves
/// `index` on the value and returns true; returns false for any other argument. Refuses a
/// missing or malformed value with a sentence for a usage error.
Result<bool> take_sandbox_option(std::span<const std::string_view> arguments, std::size_t& index,
                                 SandboxOptions& options);

/// Refuses options that each parse but say nothing together: --allow without --net
/// allowlist, whose list would be ignored (the config's 'allowed_hosts' rule).
Result<void> check_sandbox_options(const SandboxOptions& options);

/// The spec for these options (checked by check_sandbox_options()): sandbox::build_desk_sandbox_spec()
/// for the desk folder given, or a sandbox of the current folder (nothing prepared there)
/// when none was given.
Result<sandbox::SandboxSpec> build_sandbox_spec(const SandboxOptions& options);

}  // namespace deskd::app
