#pragma once
// Writing on a person's behalf with no more than a file owner's rights. An accepted
// proposal is written by deskd, but never with root's powers: a thread of its own takes the
// owner's file-system identity (fsuid and fsgid, no supplementary groups) and gives up
// every effective capability, so the kernel checks the write exactly as it would check the
// owner's own. The thread ends with the work, so its identity never leaks into deskd.

#include <sys/types.h>

#include <filesystem>
#include <functional>

#include "base/result.h"

namespace deskd::tools {

/// A file-system identity.
struct FileOwner {
  uid_t uid = 0;
  gid_t gid = 0;
};

/// Whose rights write an accepted proposal to `target`: the owner of the file it replaces,
/// or, for a new file, the owner of `desk_directory` (so a folder inside the desk that its
/// owner may not write stays closed to the accept too).
Result<FileOwner> proposal_writer(const std::filesystem::path& target, const std::filesystem::path& desk_directory);

/// Runs `work` on a new thread with `owner`'s file-system identity, no supplementary groups
/// and no effective capabilities, and returns what it returned. A deskd that is not root
/// cannot take another identity: it runs `work` with its own (never root's) rights. Fails
/// closed: if the identity cannot be taken, `work` does not run.
Result<void> run_as_owner(const FileOwner& owner, const std::function<Result<void>()>& work);

}  // namespace deskd::tools
