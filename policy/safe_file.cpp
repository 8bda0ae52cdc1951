#include "policy/safe_file.h"

#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <vector>

#include "base/random_id.h"
#include "policy/path_resolution.h"

namespace deskd::policy {

bool SafeFile::force_component_walk_ = false;

namespace {

constexpr std::uint64_t kNoLinks = RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;

// openat2 appeared in Linux 5.6; older kernels (and some seccomp profiles) answer ENOSYS,
// and then the component walk below is used for good.
std::atomic<bool> openat2_missing{false};

bool openat2_usable() { return !openat2_missing.load(std::memory_order_relaxed); }

int call_openat2(const FileSystemCalls& calls, int directory_fd, const char* path, int flags, mode_t mode) {
  return retry_on_eintr([&] { return calls.open(directory_fd, path, flags, mode, kNoLinks); });
}

std::vector<std::string> components_of(const std::filesystem::path& path) {
  std::vector<std::string> components;
  for (const auto& part : path.relative_path()) {
    if (!part.empty()) components.push_back(part.native());
  }
  return components;
}

Error open_error(int error_number, const std::filesystem::path& path) {
  switch (error_number) {
    case ELOOP:
    case EXDEV:
      return Error{ErrorCode::refused, error_number,
                   path.native() +
                       " was not opened: a symbolic link appeared on the way after the path "
                       "was checked, and links are never followed."};
    case ENOENT:
      return Error{ErrorCode::not_found, error_number, path.native() + " does not exist."};
    case ENOTDIR:
      return Error{ErrorCode::refused, error_number,
                   path.native() + " was not opened: a part of it is not a folder."};
    case EISDIR:
      return Error{ErrorCode::refused, error_number, path.native() + " is a folder, not a file."};
    default:
      return Error::from_errno(error_number, path.native() + " cannot be opened");
  }
}

// Opens `relative` (one component or several) beneath `directory_fd` without following any
// symbolic link: openat2 when the kernel has it, otherwise one O_NOFOLLOW openat per
// component, each folder opened before the next name is looked up in it.
int open_without_links(const FileSystemCalls& calls, int directory_fd, const std::string& relative, int flags,
                       mode_t mode, bool force_walk) {
  if (!force_walk && openat2_usable()) {
    const int fd = call_openat2(calls, directory_fd, relative.c_str(), flags | O_CLOEXEC, mode);
    if (fd >= 0 || errno != ENOSYS) return fd;
    openat2_missing.store(true, std::memory_order_relaxed);
  }
  const auto parts = components_of(std::filesystem::path("/") / relative);
  UniqueFd current;
  int parent = directory_fd;
  if (!relative.empty() && relative.front() == '/') {
    // An absolute path is walked from the root: the components above are relative names,
    // and looked up in AT_FDCWD they would name a look-alike tree in the current folder.
    const int root = retry_on_eintr([&] { return calls.open(AT_FDCWD, "/", O_RDONLY | O_DIRECTORY, 0, 0); });
    if (root < 0) return -1;
    current.reset(root);
    parent = current.get();
  }
  for (std::size_t index = 0; index + 1 < parts.size(); ++index) {
    const int next = retry_on_eintr(
        [&] { return calls.open(parent, parts[index].c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW, 0, 0); });
    if (next < 0) {
      // O_NOFOLLOW | O_DIRECTORY reports a link as "not a folder"; say what it really is.
      struct stat status {};
      if (errno == ENOTDIR && calls.stat(parent, parts[index].c_str(), &status, AT_SYMLINK_NOFOLLOW) == 0 &&
          S_ISLNK(status.st_mode)) {
        errno = ELOOP;
      }
      return -1;
    }
    current.reset(next);
    parent = current.get();
  }
  const std::string last = parts.empty() ? std::string(".") : parts.back();
  return retry_on_eintr([&] { return calls.open(parent, last.c_str(), flags | O_NOFOLLOW, mode, 0); });
}

Result<UniqueFd> open_absolute(const FileSystemCalls& calls, const std::filesystem::path& path, int flags,
                               mode_t mode = 0) {
  if (!path.is_absolute()) {
    return Error::make(ErrorCode::internal, path.native() + " is not an absolute path.");
  }
  const int fd = open_without_links(calls, AT_FDCWD, path.native(), flags, mode, !SafeFile::uses_openat2());
  if (fd < 0) return open_error(errno, path);
  return UniqueFd(fd);
}

Result<void> require_regular_file(int fd, const std::filesystem::path& path) {
  struct stat status {};
  if (::fstat(fd, &status) != 0) return Error::from_errno(errno, path.native() + " cannot be examined");
  if (S_ISDIR(status.st_mode)) {
    return Error::make(ErrorCode::refused, path.native() + " is a folder, not a file.");
  }
  if (!S_ISREG(status.st_mode)) {
    return Error::make(ErrorCode::refused,
                       path.native() + " is not a regular file (a device, pipe or socket).");
  }
  return success();
}

Result<void> write_all(int fd, std::string_view contents, const std::filesystem::path& path) {
  while (!contents.empty()) {
    const ssize_t written =
        retry_on_eintr([&] { return ::write(fd, contents.data(), contents.size()); });
    if (written < 0) return Error::from_errno(errno, "Writing " + path.native() + " failed");
    contents.remove_prefix(static_cast<std::size_t>(written));
  }
  if (::fsync(fd) != 0) return Error::from_errno(errno, "Flushing " + path.native() + " failed");
  return success();
}

// Opens the folder that will hold `path`, creating the missing folders beneath `base`.
Result<UniqueFd> open_parent_creating(const FileSystemCalls& calls, const std::filesystem::path& path,
                                      const std::filesystem::path& base) {
  const auto parent = path.parent_path();
  if (!is_same_or_inside(parent, base)) {
    return Error::make(ErrorCode::internal,
                       path.native() + " is not beneath " + base.native() + ".");
  }
  DESKD_ASSIGN_OR_RETURN(UniqueFd directory, open_absolute(calls, base, O_RDONLY | O_DIRECTORY));
  const auto relative = parent.lexically_relative(base);
  for (const auto& part : relative) {
    const std::string& name = part.native();
    if (name.empty() || name == ".") continue;
    int next = open_without_links(calls, directory.get(), name, O_RDONLY | O_DIRECTORY, 0, !SafeFile::uses_openat2());
    if (next < 0 && errno == ENOENT) {
      if (calls.make_directory(directory.get(), name.c_str(), 0755) != 0 && errno != EEXIST) {
        return Error::from_errno(errno, "The folder " + (base / relative).native() +
                                            " cannot be created");
      }
      next = open_without_links(calls, directory.get(), name, O_RDONLY | O_DIRECTORY, 0, !SafeFile::uses_openat2());
    }
    if (next < 0) return open_error(errno, parent);
    directory.reset(next);
  }
  return directory;
}

// Uniqueness is also checked by O_EXCL.
std::string temporary_name(const std::string& name) { return "." + name + ".deskd-" + random_hex(8) + ".tmp"; }

}  // namespace

bool SafeFile::uses_openat2() { return !force_component_walk_ && openat2_usable(); }

Result<UniqueFd> SafeFile::open_for_reading(const std::filesystem::path& path, const Calls& calls) {
  // O_NONBLOCK: opening a FIFO must not hang the caller; it is refused just below.
  DESKD_ASSIGN_OR_RETURN(UniqueFd fd, open_absolute(calls, path, O_RDONLY | O_NONBLOCK | O_NOCTTY));
  DESKD_RETURN_IF_ERROR(require_regular_file(fd.get(), path));
  const int flags = ::fcntl(fd.get(), F_GETFL);
  if (flags >= 0) ::fcntl(fd.get(), F_SETFL, flags & ~O_NONBLOCK);
  return fd;
}

Result<UniqueFd> SafeFile::open_directory(const std::filesystem::path& path, const Calls& calls) {
  return open_absolute(calls, path, O_RDONLY | O_DIRECTORY);
}

Result<FileContents> SafeFile::read(const std::filesystem::path& path, std::size_t maximum_bytes, const Calls& calls) {
  DESKD_ASSIGN_OR_RETURN(UniqueFd fd, open_for_reading(path, calls));
  FileContents contents;
  char buffer[65536];
  for (;;) {
    const ssize_t count = retry_on_eintr([&] { return ::read(fd.get(), buffer, sizeof buffer); });
    if (count < 0) return Error::from_errno(errno, "Reading " + path.native() + " failed");
    if (count == 0) break;
    const std::size_t room = maximum_bytes - contents.bytes.size();
    const auto taken = std::min(room, static_cast<std::size_t>(count));
    contents.bytes.append(buffer, taken);
    if (taken < static_cast<std::size_t>(count)) {
      contents.truncated = true;
      break;
    }
  }
  return contents;
}

Result<void> SafeFile::write(const std::filesystem::path& path, std::string_view contents,
                             WriteMode mode, const std::filesystem::path& create_folders_below,
                             const Calls& calls) {
  if (!path.is_absolute() || !path.has_filename()) {
    return Error::make(ErrorCode::internal, path.native() + " is not an absolute file path.");
  }
  DESKD_ASSIGN_OR_RETURN(UniqueFd directory, open_parent_creating(calls, path, create_folders_below));
  const std::string name = path.filename().native();

  if (mode == WriteMode::rewrite_in_place) {
    const int fd = open_without_links(calls, directory.get(), name, O_WRONLY | O_CREAT | O_NONBLOCK | O_NOCTTY,
                                      0644, !uses_openat2());
    if (fd < 0) return open_error(errno, path);
    UniqueFd file(fd);
    DESKD_RETURN_IF_ERROR(require_regular_file(file.get(), path));
    if (::ftruncate(file.get(), 0) != 0) {
      return Error::from_errno(errno, "Emptying " + path.native() + " failed");
    }
    return write_all(file.get(), contents, path);
  }

  struct stat existing {};
  mode_t permissions = 0644;
  bool exists = false;
  if (calls.stat(directory.get(), name.c_str(), &existing, AT_SYMLINK_NOFOLLOW) == 0) {
    exists = true;
    if (S_ISDIR(existing.st_mode)) {
      return Error::make(ErrorCode::refused, path.native() + " is a folder, not a file.");
    }
    // The rename would not follow a link or write into a special file, but it would
    // silently replace one; the checked path named neither, so something changed.
    if (S_ISLNK(existing.st_mode)) return open_error(ELOOP, path);
    if (!S_ISREG(existing.st_mode)) {
      return Error::make(ErrorCode::refused,
                         path.native() + " is not a regular file (a device, pipe or socket).");
    }
    permissions = existing.st_mode & 07777 & ~06000;
  }
  const std::string temporary = temporary_name(name);
  const int fd = retry_on_eintr([&] {
    return calls.open(directory.get(), temporary.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, permissions, 0);
  });
  if (fd < 0) return Error::from_errno(errno, "A temporary file beside " + path.native() +
                                                  " cannot be created");
  UniqueFd file(fd);
  ::fchmod(file.get(), permissions);  // the umask may have narrowed what was asked for
  auto written = write_all(file.get(), contents, path);
  if (mode == WriteMode::replace_durably && written.ok()) {
    if (exists && ::geteuid() == 0 && ::fchown(file.get(), existing.st_uid, existing.st_gid) != 0) {
      written = Error::from_errno(errno, "Keeping the owner of " + path.native() + " failed");
    } else if (::fsync(file.get()) != 0) {
      written = Error::from_errno(errno, "Flushing " + path.native() + " to disk failed");
    }
  }
  if (written.ok() && calls.rename(directory.get(), temporary.c_str(), name.c_str()) != 0) {
    written = open_error(errno, path);
  }
  if (!written.ok()) calls.unlink(directory.get(), temporary.c_str(), 0);
  // The rename itself must survive a crash too.
  if (written.ok() && mode == WriteMode::replace_durably) (void)::fsync(directory.get());
  return written;
}

}  // namespace deskd::policy
