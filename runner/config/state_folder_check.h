#pragma once
// Whether deskd can keep its state where the config says: judged before anything starts, so
// that `deskd check` refuses an unusable state folder and `deskd serve` does not tell
// systemd it is ready while every desk fails on it.

#include <filesystem>

#include "base/result.h"

namespace deskd::app {

/// Whether this process (its effective ids) could create `folder` (absolute) and write in
/// it: an existing one must be a folder it may list, enter and write; a missing one needs a
/// nearest existing ancestor that is a folder it may enter and write. Creates nothing.
/// Refuses with a sentence naming the folder and why (a file in the way, no permission for
/// this uid, a read-only file system).
Result<void> check_state_folder(const std::filesystem::path& folder);

/// Creates `folder` and its missing parents, then checks it as above; for `deskd serve`.
Result<void> make_state_folder(const std::filesystem::path& folder);

}  // namespace deskd::app
