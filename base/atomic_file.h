#pragma once
// Replacing a small file whole (a session, the day's usage, the schedules' state) so that a
// crash or a power cut leaves the old content or the new, never half of either.

#include <filesystem>
#include <string_view>

#include "base/result.h"

namespace deskd {

/// Writes `contents` to a temporary file beside `file` (mode 0600, never through a link),
/// fsyncs it, renames it over `file` and fsyncs the folder. `what` names the file in errors
/// ("the session", "the schedule state file"); on failure the temporary file is removed.
Result<void> write_file_atomically(const std::filesystem::path& file, std::string_view contents, std::string_view what);

}  // namespace deskd
