#include "sandbox/mount_table.h"

#include <fcntl.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>

#include "base/unique_fd.h"

namespace deskd::sandbox {
namespace {

// mountinfo writes space, tab, newline and backslash as \ooo (octal), so a path with a
// space is one field.
std::string unescape(std::string_view field) {
  std::string text;
  text.reserve(field.size());
  for (std::size_t at = 0; at < field.size(); ++at) {
    const bool octal = field[at] == '\\' && at + 3 < field.size() &&
                       field.substr(at + 1, 3).find_first_not_of("01234567") == std::string_view::npos;
    if (octal) {
      text.push_back(static_cast<char>(std::strtol(std::string(field.substr(at + 1, 3)).c_str(), nullptr, 8)));
      at += 3;
    } else {
      text.push_back(field[at]);
    }
  }
  return text;
}

// Fields: id parent major:minor root mount-point options ... - type source super-options
std::vector<std::string_view> first_fields(std::string_view line, std::size_t count) {
  std::vector<std::string_view> fields;
  std::size_t at = 0;
  while (fields.size() < count && at < line.size()) {
    const std::size_t end = line.find(' ', at);
    fields.push_back(line.substr(at, end == std::string_view::npos ? std::string_view::npos : end - at));
    if (end == std::string_view::npos) break;
    at = end + 1;
  }
  return fields;
}

}  // namespace

std::vector<MountEntry> parse_mount_table(std::string_view mountinfo) {
  std::vector<MountEntry> table;
  std::size_t at = 0;
  while (at < mountinfo.size()) {
    std::size_t end = mountinfo.find('\n', at);
    if (end == std::string_view::npos) end = mountinfo.size();
    const std::string_view line = mountinfo.substr(at, end - at);
    at = end + 1;
    const auto fields = first_fields(line, 5);
    if (fields.size() < 5) continue;
    const std::string numbers(fields[2]);
    const std::size_t colon = numbers.find(':');
    if (colon == std::string::npos) continue;
    char* rest = nullptr;
    const unsigned long major_number = std::strtoul(numbers.c_str(), &rest, 10);
    if (rest != numbers.c_str() + colon) continue;
    const unsigned long minor_number = std::strtoul(numbers.c_str() + colon + 1, &rest, 10);
    if (*rest != '\0') continue;
    table.push_back(MountEntry{::makedev(major_number, minor_number), unescape(fields[3]), unescape(fields[4])});
  }
  return table;
}

Result<std::vector<MountEntry>> read_mount_table() {
  UniqueFd file(::open("/proc/self/mountinfo", O_RDONLY | O_CLOEXEC));
  if (!file) return Error::from_errno(errno, "Reading the mount table failed: opening /proc/self/mountinfo");
  std::string text;
  char buffer[65536];
  for (;;) {
    const ssize_t got = retry_on_eintr([&] { return ::read(file.get(), buffer, sizeof buffer); });
    if (got < 0) return Error::from_errno(errno, "Reading the mount table failed: reading /proc/self/mountinfo");
    if (got == 0) break;
    text.append(buffer, static_cast<std::size_t>(got));
  }
  return parse_mount_table(text);
}

std::size_t mounts_on_top(const std::vector<MountEntry>& table, const std::string& mount_point, dev_t device,
                          std::string_view root) {
  std::size_t count = 0;
  for (auto entry = table.rbegin(); entry != table.rend(); ++entry) {
    if (entry->mount_point != mount_point) continue;
    if (entry->device != device || entry->root != root) break;
    ++count;
  }
  return count;
}

std::vector<MountEntry> mounts_at(const std::vector<MountEntry>& table, const std::string& mount_point) {
  std::vector<MountEntry> found;
  for (const auto& entry : table) {
    if (entry.mount_point == mount_point) found.push_back(entry);
  }
  return found;
}

}  // namespace deskd::sandbox
