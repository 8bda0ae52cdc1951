#pragma once
// The sandbox options that `deskd sandbox`, `deskd shell` and `deskd mcp` share — the desk
// folder, hidden paths, network, limits, ids, hostname, variables — parsed one argument at a
// time so that each command keeps its own options beside them, and turned into a
// SandboxSpec the same way everywhere.

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
  std::vector<std::string> environment_variables;   ///< Names copied from deskd's environment.
  std::optional<sandbox::NetworkMode> network;
  std::optional<std::uint64_t> memory_bytes;
  std::optional<std::uint64_t> processes;
  std::optional<std::uint64_t> file_size_bytes;
  std::optional<std::uint64_t> open_files;
  std::optional<std::uint64_t> uid;
  std::optional<std::uint64_t> gid;
  std::optional<std::string> hostname;
};

/// The usage lines of every option but --desk, whose wording differs between commands.
extern const char* const kSandboxOptionsHelp;

/// If arguments[index] is a sandbox option, stores it and its value in `options`, leaves
/// `index` on the value and returns true; returns false for any other argument. Refuses a
/// missing or malformed value with a sentence for a usage error.
Result<bool> take_sandbox_option(std::span<const std::string_view> arguments, std::size_t& index,
                                 SandboxOptions& options);

/// The spec for these options: the confinement of the desk folder (the current folder when
/// none was given) with the hidden paths, then the settings. When a desk folder was given,
/// its missing writable places are created and, under a root deskd, handed to the
/// sandbox's uid. Refuses what the confinement, the builder or the preparation refuse.
Result<sandbox::SandboxSpec> build_sandbox_spec(const SandboxOptions& options);

}  // namespace deskd::app
