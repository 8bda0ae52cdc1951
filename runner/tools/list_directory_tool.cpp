// list_directory: one folder's entries, read from a descriptor SafeFile opened without
// following links. Entries are looked at only through the folder itself (their names,
// types and link texts); a hidden entry is shown by name and never examined further.

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <boost/json/object.hpp>
#include <cerrno>
#include <climits>
#include <memory>
#include <vector>

#include "base/terminal_text.h"
#include "policy/safe_file.h"
#include "runner/tools/file_tool_support.h"
#include "runner/tools/file_tools.h"
#include "runner/tools/tool_input.h"

namespace deskd::tools {
namespace {

using detail::shown;

struct DirectoryCloser {
  void operator()(DIR* directory) const { ::closedir(directory); }
};

// A name (or a link's text) as the listing shows it: as it is when ordinary (spaces and
// quotes included, as the file tools take it); quoted as bash reads it, $'...', when it holds
// a line break, a control, an invisible or bidi character, bytes that are not UTF-8 or a
// look-alike of '/', so that `a\nFAKE-ENTRY.md` is one entry, never two.
std::string shown_name(std::string_view name) {
  std::string quoted = terminal_path(name);
  return quoted.starts_with("$'") ? quoted : std::string(name);
}

// What one entry looks like in the listing: "name", "name/" for a folder, "name -> target"
// for a symbolic link (its text, never followed).
std::string display_entry(int directory_fd, const dirent& entry, bool hidden) {
  const std::string name = shown_name(entry.d_name);
  unsigned char type = entry.d_type;
  if (type == DT_UNKNOWN && !hidden) {
    struct stat status {};
    if (::fstatat(directory_fd, entry.d_name, &status, AT_SYMLINK_NOFOLLOW) == 0) {
      type = S_ISDIR(status.st_mode) ? DT_DIR : S_ISLNK(status.st_mode) ? DT_LNK : DT_REG;
    }
  }
  if (type == DT_DIR) return name + "/";
  if (type == DT_LNK && !hidden) {
    char target[PATH_MAX];
    const ssize_t length = ::readlinkat(directory_fd, entry.d_name, target, sizeof target);
    if (length >= 0) return name + " -> " + shown_name(std::string_view(target, static_cast<std::size_t>(length)));
  }
  return name;
}

}  // namespace

std::string_view ListDirectoryTool::description() const {
  return "Lists a folder: one entry a line, sorted by name; folders end with '/', and symbolic "
         "links show where they point. Any folder may be listed except hidden secrets; a "
         "relative path starts at your desk folder, and the default is the desk folder itself. "
         "At most 1000 entries are shown.";
}

std::string_view ListDirectoryTool::input_schema() const {
  return R"({"type":"object","properties":{)"
         R"("path":{"type":"string","description":"The folder to list; default \".\", your desk folder."}}})";
}

ToolResult ListDirectoryTool::run(const boost::json::object& input) const {
  const ToolInput fields(name(), input);
  auto path = fields.optional_string("path");
  if (!path.ok()) return detail::failure(path.error());
  const std::string requested = path->value_or(".");

  auto resolved = context().policy.readable(requested);
  if (!resolved.ok()) return context().policy_failure(resolved.error(), requested, "list");
  auto folder = policy::SafeFile::open_directory(*resolved, *context().calls);
  if (!folder.ok()) {
    return detail::failure(detail::opening_error(folder.error(), requested, *resolved, detail::Purpose::list_folder, *context().calls));
  }
  std::unique_ptr<DIR, DirectoryCloser> directory(::fdopendir(folder->get()));
  if (directory == nullptr) return detail::failure(Error::from_errno(errno, "Listing " + shown(requested) + " failed"));
  folder->release();  // the DIR owns the descriptor now

  // (name, how it is shown): sorted by name, so "a/" still comes before "a-b".
  std::vector<std::pair<std::string, std::string>> entries;
  const int directory_fd = ::dirfd(directory.get());
  for (;;) {
    errno = 0;
    const dirent* entry = ::readdir(directory.get());
    if (entry == nullptr) {
      if (errno != 0) return detail::failure(Error::from_errno(errno, "Listing " + shown(requested) + " failed"));
      break;
    }
    const std::string_view entry_name = entry->d_name;
    if (entry_name == "." || entry_name == "..") continue;
    const bool hidden = context().policy.confinement().hiding(*resolved / entry->d_name) != nullptr;
    entries.emplace_back(entry_name, display_entry(directory_fd, *entry, hidden));
  }
  if (entries.empty()) return ToolResult::success(shown(requested) + " is empty.");

  const std::size_t kept = std::min(entries.size(), kMaximumEntries);
  std::partial_sort(entries.begin(), entries.begin() + static_cast<std::ptrdiff_t>(kept), entries.end());
  std::string text;
  for (std::size_t index = 0; index < kept; ++index) text += entries[index].second + "\n";
  ToolResult result = ToolResult::success(std::move(text));
  if (kept < entries.size()) {
    result.text += "\n(" + detail::count_of(entries.size() - kept, "more entry is", "more entries are") +
                   " not shown; a listing stops at " + std::to_string(kMaximumEntries) +
                   ". Use bash (ls, find) to see the rest.)\n";
    result.truncated = true;
  }
  return result;
}

}  // namespace deskd::tools
