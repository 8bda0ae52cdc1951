#include "runner/config/state_folder_check.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <system_error>

namespace deskd::app {
namespace {

using std::filesystem::path;

std::string this_user() { return "uid " + std::to_string(::geteuid()); }

Error refusal(const path& folder, int error_number, const std::string& why) {
  return Error{ErrorCode::refused, error_number,
               "deskd's state folder " + folder.native() + " " + why +
                   "; make it a folder the user deskd runs as may write, or set [runner] state_folder to one"};
}

// Why this process may not write in `folder`: EROFS is the file system's, not a permission.
std::string why_not_writable(const path& folder, int error_number) {
  if (error_number == EROFS) return folder.native() + " is on a read-only file system";
  if (error_number == EACCES || error_number == EPERM) return this_user() + " may not write in " + folder.native();
  return folder.native() + " cannot be written: " + std::strerror(error_number);
}

// AT_EACCESS: deskd acts with its effective ids, as the files it makes will.
int access_error(const path& folder, int mode) {
  return ::faccessat(AT_FDCWD, folder.c_str(), mode, AT_EACCESS) == 0 ? 0 : errno;
}

}  // namespace

Result<void> check_state_folder(const path& folder) {
  struct stat status {};
  if (::stat(folder.c_str(), &status) == 0) {
    if (!S_ISDIR(status.st_mode)) return refusal(folder, ENOTDIR, "is not a folder");
    if (const int error = access_error(folder, R_OK | W_OK | X_OK); error != 0) {
      return refusal(folder, error, "cannot be used: " + why_not_writable(folder, error));
    }
    return success();
  }
  // Missing: what decides is the nearest folder that exists, where it would be created. A
  // file on the way (ENOTDIR) is found as that ancestor.
  path ancestor = folder;
  for (;;) {
    const int error = errno;
    if (error != ENOENT && error != ENOTDIR) {
      if (error == EACCES) {
        return refusal(folder, error, "cannot be reached: " + this_user() + " may not look into a folder on its path");
      }
      return refusal(folder, error, std::string("cannot be examined: ") + std::strerror(error));
    }
    if (ancestor == ancestor.parent_path()) return refusal(folder, error, "cannot be created: / cannot be examined");
    ancestor = ancestor.parent_path();
    if (::stat(ancestor.c_str(), &status) == 0) break;
  }
  if (!S_ISDIR(status.st_mode)) {
    return refusal(folder, ENOTDIR, "cannot be created: " + ancestor.native() + " is a file, not a folder");
  }
  if (const int error = access_error(ancestor, W_OK | X_OK); error != 0) {
    return refusal(folder, error, "cannot be created: " + why_not_writable(ancestor, error));
  }
  return success();
}

Result<void> make_state_folder(const path& folder) {
  std::error_code error;
  std::filesystem::create_directories(folder, error);
  if (error) {
    // The check's sentence says why better than create_directories does, when it can tell.
    if (auto usable = check_state_folder(folder); !usable.ok()) return usable;
    return refusal(folder, error.value(), "cannot be created: " + error.message());
  }
  return check_state_folder(folder);
}

}  // namespace deskd::app
