#pragma once
// SafeFile: opens, reads and writes paths that PathPolicy has already allowed, without a
// check-then-use race. A resolved path holds no symbolic links by construction, so every
// open refuses to follow one: if a link is swapped in after the check, the call fails
// with a clear error instead of following it out of the allowed places.

#include <filesystem>
#include <string>
#include <string_view>

#include "base/result.h"
#include "base/unique_fd.h"
#include "policy/file_system_calls.h"

namespace deskd::policy {

/// What a bounded read returned.
struct FileContents {
  std::string bytes;
  bool truncated = false;  ///< The file held more than the maximum asked for.
};

/// How a write lands.
enum class WriteMode {
  /// Written to a temporary file in the same folder, then renamed over the target, so a
  /// reader sees the old file or the new one, never half of one.
  replace_atomically,
  /// As replace_atomically, for a file deskd writes on a person's behalf (an accepted
  /// proposal): the file and the rename are fsync'ed before the write counts as done, and
  /// a deskd running as root keeps the file's owner.
  replace_durably,
  /// Truncated and rewritten in place, keeping the inode. For files the sandbox binds on
  /// their own (Memory.md): after a rename the sandbox would still see the old inode.
  rewrite_in_place,
};

/// Race-free file operations on absolute, resolved paths. Every path-based system call goes
/// through `calls`: deskd's own by default, a desk's for its file tools.
class SafeFile {
 public:
  using Calls = FileSystemCalls;

  /// Opens a regular file for reading. Refuses symbolic links anywhere on the path,
  /// folders, and special files (FIFOs, devices, sockets).
  static Result<UniqueFd> open_for_reading(const std::filesystem::path& path,
                                           const Calls& calls = own_file_system_calls());

  /// Opens a folder for listing, refusing symbolic links anywhere on the path.
  static Result<UniqueFd> open_directory(const std::filesystem::path& path,
                                         const Calls& calls = own_file_system_calls());

  /// Reads at most `maximum_bytes` of a regular file.
  static Result<FileContents> read(const std::filesystem::path& path, std::size_t maximum_bytes,
                                   const Calls& calls = own_file_system_calls());

  /// Writes `contents` to `path`. Missing folders between `create_folders_below` (which
  /// must exist and be an ancestor of `path`) and the file are created, refusing links on
  /// the way. Refuses a target that is a folder or a special file.
  static Result<void> write(const std::filesystem::path& path, std::string_view contents,
                            WriteMode mode, const std::filesystem::path& create_folders_below,
                            const Calls& calls = own_file_system_calls());

  /// Whether opens use openat2(2); false means the O_NOFOLLOW walk is used instead.
  static bool uses_openat2();

 private:
  friend class SafeFileTestPeer;
  static bool force_component_walk_;  // tests exercise the fallback on kernels with openat2
};

}  // namespace deskd::policy
