#include "policy/file_system_calls.h"

#include <fcntl.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace deskd::policy {
namespace {

class OwnFileSystemCalls final : public FileSystemCalls {
 public:
  int open(int directory, const char* path, int flags, mode_t mode, std::uint64_t resolve) const override {
    if (resolve == 0) return ::openat(directory, path, flags | O_CLOEXEC, mode);
    open_how how{};
    how.flags = static_cast<std::uint64_t>(static_cast<unsigned>(flags | O_CLOEXEC));
    how.mode = (flags & (O_CREAT | O_TMPFILE)) != 0 ? mode : 0;
    how.resolve = resolve;
    return static_cast<int>(::syscall(SYS_openat2, directory, path, &how, sizeof how));
  }
  int make_directory(int directory, const char* path, mode_t mode) const override {
    return ::mkdirat(directory, path, mode);
  }
  int rename(int directory, const char* from, const char* to) const override {
    return ::renameat(directory, from, directory, to);
  }
  int unlink(int directory, const char* path, int flags) const override { return ::unlinkat(directory, path, flags); }
  int stat(int directory, const char* path, struct stat* status, int flags) const override {
    return ::fstatat(directory, path, status, flags);
  }
  long read_link(int directory, const char* path, char* buffer, std::size_t size) const override {
    return ::readlinkat(directory, path, buffer, size);
  }
};

}  // namespace

const FileSystemCalls& own_file_system_calls() {
  static const OwnFileSystemCalls calls;
  return calls;
}

}  // namespace deskd::policy
