#pragma once
// Resolves a path to where it really is, as far as it exists: symbolic links are followed
// and `..` is applied to the real parent, like Python's Path.resolve(strict=False).
// Components past the first missing one are appended as written.

#include <filesystem>
#include <string>
#include <string_view>

#include "base/result.h"

namespace deskd::policy {

/// Checks that `requested` can be a path at all: not empty, no NUL byte, valid UTF-8, at
/// most PATH_MAX - 1 bytes. The error's sentence quotes the path (escaped) and says why.
Result<void> validate_requested_path(std::string_view requested);

/// Resolves `requested` (validated first); a relative path starts at `base_directory`, which
/// must be absolute. Refuses symlink loops, paths that go through a file (`Memory.md/x`),
/// and components that cannot be examined (for example, permission denied).
Result<std::filesystem::path> resolve_path(std::string_view requested,
                                           const std::filesystem::path& base_directory);

/// Whether `path` is `ancestor` or lies inside it, by whole components. Both must be
/// absolute and normal (as resolve_path returns them).
bool is_same_or_inside(const std::filesystem::path& path, const std::filesystem::path& ancestor);

/// Whether `path` lies strictly inside `ancestor`, by whole components.
bool is_strictly_inside(const std::filesystem::path& path, const std::filesystem::path& ancestor);

/// `requested` made printable for a message: control bytes, NUL and invalid UTF-8 become
/// \xNN escapes, everything else is kept as written.
std::string printable_path(std::string_view requested);

}  // namespace deskd::policy
