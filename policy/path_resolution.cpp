#include "policy/path_resolution.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <deque>
#include <vector>

namespace deskd::policy {
namespace {

// The kernel gives up after 40 links (MAXSYMLINKS); so do we, to agree with what an open
// of the same path would do.
constexpr int kMaximumSymlinkFollows = 40;

// Length of the UTF-8 sequence starting at `text[index]`, or 0 if it is not a valid one
// (overlong forms, surrogates and code points past U+10FFFF are invalid).
std::size_t utf8_sequence_length(std::string_view text, std::size_t index) {
  const auto byte = [&](std::size_t offset) {
    return static_cast<unsigned char>(text[index + offset]);
  };
  const unsigned char lead = byte(0);
  std::size_t length = 0;
  unsigned minimum = 0;
  unsigned code_point = 0;
  if (lead < 0x80) return 1;
  if ((lead & 0xE0) == 0xC0) { length = 2; minimum = 0x80; code_point = lead & 0x1F; }
  else if ((lead & 0xF0) == 0xE0) { length = 3; minimum = 0x800; code_point = lead & 0x0F; }
  else if ((lead & 0xF8) == 0xF0) { length = 4; minimum = 0x10000; code_point = lead & 0x07; }
  else return 0;
  if (index + length > text.size()) return 0;
  for (std::size_t offset = 1; offset < length; ++offset) {
    if ((byte(offset) & 0xC0) != 0x80) return 0;
    code_point = (code_point << 6) | (byte(offset) & 0x3F);
  }
  if (code_point < minimum || code_point > 0x10FFFF) return 0;
  if (code_point >= 0xD800 && code_point <= 0xDFFF) return 0;
  return length;
}

std::vector<std::string> split_components(std::string_view path) {
  std::vector<std::string> components;
  std::size_t start = 0;
  while (start <= path.size()) {
    const std::size_t slash = path.find('/', start);
    const std::size_t end = slash == std::string_view::npos ? path.size() : slash;
    if (end > start) components.emplace_back(path.substr(start, end - start));
    if (slash == std::string_view::npos) break;
    start = slash + 1;
  }
  return components;
}

std::string join_components(const std::vector<std::string>& components) {
  if (components.empty()) return "/";
  std::string joined;
  for (const auto& component : components) {
    joined += '/';
    joined += component;
  }
  return joined;
}

}  // namespace

std::string printable_path(std::string_view requested) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string printable;
  printable.reserve(requested.size());
  std::size_t index = 0;
  while (index < requested.size()) {
    const auto byte = static_cast<unsigned char>(requested[index]);
    const std::size_t length = utf8_sequence_length(requested, index);
    if (length == 0 || byte < 0x20 || byte == 0x7F) {
      printable += "\\x";
      printable += kHex[byte >> 4];
      printable += kHex[byte & 0x0F];
      ++index;
      continue;
    }
    printable.append(requested.substr(index, length));
    index += length;
  }
  return printable;
}

Result<void> validate_requested_path(std::string_view requested) {
  if (requested.empty()) {
    return Error::make(ErrorCode::invalid_argument, "An empty path names no file.");
  }
  if (requested.find('\0') != std::string_view::npos) {
    return Error::make(ErrorCode::invalid_argument,
                       printable_path(requested) + " contains a NUL byte, which no path may hold.");
  }
  if (requested.size() >= PATH_MAX) {
    return Error::make(ErrorCode::invalid_argument,
                       "The path is " + std::to_string(requested.size()) +
                           " bytes long; a path may be at most " + std::to_string(PATH_MAX - 1) +
                           " bytes.");
  }
  for (std::size_t index = 0; index < requested.size();) {
    const std::size_t length = utf8_sequence_length(requested, index);
    if (length == 0) {
      return Error::make(ErrorCode::invalid_argument,
                         printable_path(requested) + " is not valid UTF-8.");
    }
    index += length;
  }
  return success();
}

Result<std::filesystem::path> resolve_path(std::string_view requested,
                                           const std::filesystem::path& base_directory,
                                           const FileSystemCalls& calls,
                                           std::span<const std::filesystem::path> unexamined) {
  DESKD_RETURN_IF_ERROR(validate_requested_path(requested));
  const std::string shown = printable_path(requested);

  std::vector<std::string> resolved;
  std::deque<std::string> remaining;
  if (requested.front() != '/') {
    for (auto& component : split_components(base_directory.native())) remaining.push_back(component);
  }
  for (auto& component : split_components(requested)) remaining.push_back(std::move(component));

  int symlink_follows = 0;
  // Depth in `resolved` of the first component that did not exist; the rest is taken as
  // written, until a `..` climbs back above it (then links count again, as in Python).
  std::size_t missing_depth = 0;
  bool last_is_directory = true;  // what `resolved` names is a folder (or does not exist)
  std::string last_file;          // the file `resolved` names, for the error message

  while (!remaining.empty()) {
    std::string component = std::move(remaining.front());
    remaining.pop_front();
    if (component == ".") continue;
    if (!last_is_directory) {
      return Error::make(ErrorCode::refused,
                         shown + " goes through " + last_file + ", which is a file, not a folder.");
    }
    if (component == "..") {
      if (!resolved.empty()) resolved.pop_back();
      if (resolved.size() < missing_depth) missing_depth = 0;
      continue;
    }
    resolved.push_back(std::move(component));
    if (missing_depth != 0) continue;

    const std::string candidate = join_components(resolved);
    const bool hidden = std::any_of(unexamined.begin(), unexamined.end(), [&](const std::filesystem::path& path) {
      return is_same_or_inside(std::filesystem::path(candidate), path);
    });
    if (hidden) {
      missing_depth = resolved.size();
      continue;
    }
    struct stat status {};
    if (calls.stat(AT_FDCWD, candidate.c_str(), &status, AT_SYMLINK_NOFOLLOW) != 0) {
      const int error_number = errno;
      if (error_number == ENOENT) {
        missing_depth = resolved.size();
        continue;
      }
      if (error_number == ENAMETOOLONG) {
        return Error::make(ErrorCode::invalid_argument,
                           shown + " cannot be resolved: a name in it is longer than 255 bytes, or it "
                                   "grows too long as its links are followed.");
      }
      return Error::from_errno(error_number, shown + " cannot be resolved: " + candidate +
                                                 " cannot be examined");
    }
    if (S_ISLNK(status.st_mode)) {
      if (++symlink_follows > kMaximumSymlinkFollows) {
        return Error::make(ErrorCode::refused,
                           shown + " cannot be resolved: it leads into a loop of symbolic links.");
      }
      std::string target(PATH_MAX, '\0');
      const long length = calls.read_link(AT_FDCWD, candidate.c_str(), target.data(), target.size());
      if (length < 0) {
        return Error::from_errno(errno, shown + " cannot be resolved: the link " + candidate +
                                            " cannot be read");
      }
      target.resize(static_cast<std::size_t>(length));
      resolved.pop_back();
      if (!target.empty() && target.front() == '/') resolved.clear();
      auto target_components = split_components(target);
      remaining.insert(remaining.begin(), target_components.begin(), target_components.end());
      continue;
    }
    last_is_directory = S_ISDIR(status.st_mode);
    if (!last_is_directory) last_file = candidate;
  }
  return std::filesystem::path(join_components(resolved));
}

bool is_same_or_inside(const std::filesystem::path& path, const std::filesystem::path& ancestor) {
  const std::string& text = path.native();
  const std::string& base = ancestor.native();
  if (text.size() < base.size() || text.compare(0, base.size(), base) != 0) return false;
  if (text.size() == base.size()) return true;
  return base == "/" || text[base.size()] == '/';
}

bool is_strictly_inside(const std::filesystem::path& path, const std::filesystem::path& ancestor) {
  return path.native() != ancestor.native() && is_same_or_inside(path, ancestor);
}

}  // namespace deskd::policy
