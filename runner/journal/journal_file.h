#pragma once
// Internal to the journal: the file operations its parts share — reading lines, writing
// whole buffers, syncing a folder. Not for use outside runner/journal/ and the schedules (runner/desk/schedule.cpp).

#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "base/result.h"

namespace deskd::desk::journal_file {

/// `path` in double quotes, for messages.
std::string quoted(const std::filesystem::path& path);

/// Makes a new or renamed file's name durable: without this, a power cut can leave the
/// folder without the journal even though its lines were fsync'ed.
Result<void> sync_folder(const std::filesystem::path& folder);

/// Calls `take_line` for each line of fd's first `limit` bytes (all when nullopt), without
/// its newline; a last line without one is taken too. Reads from offset 0 with pread, so
/// it does not move the fd's offset.
Result<void> read_lines(int fd, std::optional<std::uint64_t> limit, const std::filesystem::path& path,
                        const std::function<void(std::string_view)>& take_line);

/// Writes all of `bytes` (retrying short writes); the error names `path`.
Result<void> write_all(int fd, std::string_view bytes, const std::filesystem::path& path);

}  // namespace deskd::desk::journal_file
