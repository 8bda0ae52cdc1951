#pragma once
// What the config may hand the sandbox, judged before any sandbox starts. The config loader
// refuses what fails here; the sandbox may ask the same questions.

#include <filesystem>

#include "base/result.h"

namespace deskd::app {

/// Refuses a read-only path (absolute, resolved) that would undo the sandbox's own view: `/`
/// (that is host_view "full"), /tmp itself, and anything in /proc, /sys, /dev, /run or
/// /var/run, which the sandbox replaces so that no host device or Unix socket is reachable.
Result<void> check_read_only_path(const std::filesystem::path& read_only_path);

}  // namespace deskd::app
