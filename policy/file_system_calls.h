#pragma once
// FileSystemCalls: the few system calls SafeFile and path resolution make by name (open,
// mkdir, rename, unlink, stat, readlink), behind one interface, so that the same race-free logic can run with deskd's own
// rights (proposals accepted on a person's behalf) or with a desk's (its file tools, whose
// calls a helper inside the desk's sandbox makes: sandbox/file_opener.h). Calls on a
// descriptor already open (read, write, fstat, fsync) need no interface: the rights were
// checked when it was opened.

#include <sys/stat.h>

#include <cstddef>
#include <cstdint>

namespace deskd::policy {

class FileSystemCalls {
 public:
  virtual ~FileSystemCalls() = default;
  // Each returns what the system call returns, with errno set when it fails. A directory
  // descriptor of AT_FDCWD means the path is absolute. Opened descriptors are close-on-exec.

  /// openat2(directory, path, {flags, mode, resolve}); plain openat when `resolve` is 0.
  virtual int open(int directory, const char* path, int flags, mode_t mode, std::uint64_t resolve) const = 0;
  virtual int make_directory(int directory, const char* path, mode_t mode) const = 0;
  /// renameat(directory, from, directory, to).
  virtual int rename(int directory, const char* from, const char* to) const = 0;
  virtual int unlink(int directory, const char* path, int flags) const = 0;
  virtual int stat(int directory, const char* path, struct stat* status, int flags) const = 0;
  /// readlinkat(directory, path, buffer, size): the link's target, not NUL-terminated.
  virtual long read_link(int directory, const char* path, char* buffer, std::size_t size) const = 0;
};

/// The calls made by deskd itself, with its own rights.
const FileSystemCalls& own_file_system_calls();

}  // namespace deskd::policy
