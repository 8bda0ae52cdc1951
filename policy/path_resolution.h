#pragma once
// Resolves a path to where it really is, as far as it exists: symbolic links are followed
// and `..` is applied to the real parent, like Python's Path.resolve(strict=False).
// Components past the first missing one are appended as written.

#include <filesystem>
#include <span>
#include <string>
#include <string_view>

#include "base/result.h"
#include "policy/file_system_calls.h"

namespace deskd::policy {

/// Checks that `requested` can be a path at all: not empty, no NUL byte, valid UTF-8, at
/// most PATH_MAX - 1 bytes. The error's sentence quotes the path (escaped) and says why.
Result<void> validate_requested_path(std::string_view requested);

/// Resolves `requested` (validated first); a relative path starts at `base_directory`, which
/// must be absolute. Refuses symlink loops, paths that go through a file (`Memory.md/x`),
/// and components that cannot be examined (for example, permission denied). Every lstat
/// and readlink is made through `calls`: for a desk, its FileOpener inside its sandbox, so
/// the resolution (and every sentence about it) sees exactly the desk's own view.
/// Nothing at or inside an `unexamined` path (the hidden paths) is looked at: the rest of
/// the path is taken as written there, so the caller's refusal of the hidden path is what
/// the desk hears, never what the mask over it looks like.
Result<std::filesystem::path> resolve_path(std::string_view requested,
                                           const std::filesystem::path& base_directory,
                                           const FileSystemCalls& calls = own_file_system_calls(),
                                           std::span<const std::filesystem::path> unexamined = {});

/// Whether `path` is `ancestor` or lies inside it, by whole components. Both must be
/// absolute and normal (as resolve_path returns them).
bool is_same_or_inside(const std::filesystem::path& path, const std::filesystem::path& ancestor);

/// Whether `path` lies strictly inside `ancestor`, by whole components.
bool is_strictly_inside(const std::filesystem::path& path, const std::filesystem::path& ancestor);

/// `requested` made printable for a message: control bytes, NUL and invalid UTF-8 become
/// \xNN escapes, everything else is kept as written.
std::string printable_path(std::string_view requested);

}  // namespace deskd::policy
