#pragma once
// Small pieces the file tools share: how a requested path is shown in a sentence, and how
// the errors of PathPolicy and SafeFile become results a model can act on.

#include <fcntl.h>
#include <sys/stat.h>

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

#include "base/result.h"
#include "policy/file_system_calls.h"
#include "policy/path_resolution.h"
#include "runner/tools/tool.h"

namespace deskd::tools::detail {

/// The path as the model wrote it, safe to print (control bytes escaped), as the policy
/// prints it in its own messages.
inline std::string shown(std::string_view requested) { return policy::printable_path(requested); }

/// An error result carrying `error`'s sentence verbatim.
inline ToolResult failure(const Error& error) { return ToolResult::failure(error.what); }

/// What a tool opened a path for.
enum class Purpose { read_file, write_file, edit_file, list_folder };

/// SafeFile names the resolved absolute path; for the common cases a sentence naming the
/// path as the model wrote it reads better and says what to do instead. Other errors (a
/// link swapped in, permissions) keep SafeFile's sentence.
inline Error opening_error(Error error, std::string_view requested, const std::filesystem::path& resolved,
                           Purpose purpose, const policy::FileSystemCalls& calls) {
  if (error.code == ErrorCode::not_found) {
    std::string sentence = shown(requested) + " does not exist.";
    if (purpose == Purpose::edit_file) sentence = shown(requested) + " does not exist; create it with write_file.";
    return Error::make(ErrorCode::not_found, sentence);
  }
  struct stat status {};
  // Asked the way the opening was made (inside the desk's sandbox), so that what is out of
  // the desk's sight stays out of its messages too.
  if (calls.stat(AT_FDCWD, resolved.c_str(), &status, AT_SYMLINK_NOFOLLOW) != 0) return error;
  if (purpose != Purpose::list_folder && S_ISDIR(status.st_mode)) {
    std::string sentence = shown(requested) + " is a folder, not a file.";
    if (purpose == Purpose::read_file) sentence += " List it with list_directory.";
    return Error::make(ErrorCode::refused, sentence);
  }
  if (purpose == Purpose::list_folder && !S_ISDIR(status.st_mode) && !S_ISLNK(status.st_mode)) {
    return Error::make(ErrorCode::refused, shown(requested) + " is a file, not a folder; read it with read_file.");
  }
  return error;
}

/// "1 byte", "2 bytes".
inline std::string count_of(std::uint64_t count, std::string_view singular, std::string_view plural) {
  return std::to_string(count) + " " + std::string(count == 1 ? singular : plural);
}

}  // namespace deskd::tools::detail
