#include "runner/app/desk_id_range_check.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include "base/unique_fd.h"

namespace deskd::app {
namespace {

constexpr std::size_t kMaximumSubidFileBytes = std::size_t{16} << 20;
constexpr std::size_t kShownPerKind = 3;

struct IdRange {
  std::uint64_t first = 0;
  std::uint64_t end = 0;  // one past the last id
  bool contains(std::uint64_t id) const { return id >= first && id < end; }
  bool overlaps(std::uint64_t start, std::uint64_t count) const { return start < end && start + count > first; }
};

// What was found, by kind ("users", "processes", ...), in the order found.
struct Findings {
  std::vector<std::pair<std::string, std::vector<std::string>>> kinds;
  std::vector<std::string> unreadable;
  std::size_t deskd_processes = 0;  // in the range, but started by a running deskd

  void add(const std::string& kind, std::string item) {
    auto found = std::find_if(kinds.begin(), kinds.end(), [&](const auto& entry) { return entry.first == kind; });
    if (found == kinds.end()) found = kinds.insert(kinds.end(), {kind, {}});
    found->second.push_back(std::move(item));
  }
};

// The file's text; nullopt when it does not exist (or vanished, for /proc), and when it cannot
// be read, with `failure` set.
std::optional<std::string> read_text(const std::filesystem::path& file, std::string* failure) {
  UniqueFd fd(retry_on_eintr([&] { return ::open(file.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY); }));
  if (!fd) {
    if (errno != ENOENT && errno != ESRCH && failure != nullptr) *failure = std::strerror(errno);
    return std::nullopt;
  }
  std::string text;
  char buffer[8192];
  for (;;) {
    const ssize_t count = retry_on_eintr([&] { return ::read(fd.get(), buffer, sizeof buffer); });
    if (count < 0) {
      if (errno != ESRCH && failure != nullptr) *failure = std::strerror(errno);
      return std::nullopt;
    }
    if (count == 0 || text.size() > kMaximumSubidFileBytes) return text;
    text.append(buffer, static_cast<std::size_t>(count));
  }
}

std::optional<std::uint64_t> number(std::string_view text) {
  std::uint64_t value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || error != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

std::vector<std::string_view> split(std::string_view text, char separator) {
  std::vector<std::string_view> parts;
  for (std::size_t start = 0;;) {
    const std::size_t end = text.find(separator, start);
    parts.push_back(text.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start));
    if (end == std::string_view::npos) return parts;
    start = end + 1;
  }
}

// Calls `line_handler` with the colon-separated fields of every line of `file`.
template <typename Handler>
void for_each_entry(const std::filesystem::path& file, Findings& findings, Handler&& line_handler) {
  std::string failure;
  const auto text = read_text(file, &failure);
  if (!text) {
    if (!failure.empty()) findings.unreadable.push_back(file.native() + " cannot be read: " + failure);
    return;
  }
  for (const auto line : split(*text, '\n')) {
    if (line.empty() || line.front() == '#') continue;
    line_handler(split(line, ':'));
  }
}

void check_accounts(const std::filesystem::path& file, const std::string& kind, const char* id_word,
                    const IdRange& range, Findings& findings) {
  for_each_entry(file, findings, [&](const std::vector<std::string_view>& fields) {
    if (fields.size() < 3) return;
    const auto id = number(fields[2]);
    if (!id || !range.contains(*id)) return;
    findings.add(kind, "'" + std::string(fields[0]) + "' (" + id_word + " " + std::to_string(*id) + ") in " +
                           file.native());
  });
}

void check_subordinate_ranges(const std::filesystem::path& file, const IdRange& range, Findings& findings) {
  for_each_entry(file, findings, [&](const std::vector<std::string_view>& fields) {
    if (fields.size() < 3) return;
    const auto start = number(fields[1]);
    const auto count = number(fields[2]);
    if (!start || !count || *count == 0 || !range.overlaps(*start, *count)) return;
    findings.add("subordinate id ranges", file.native() + " gives '" + std::string(fields[0]) + "' " +
                                               std::to_string(*start) + "..." + std::to_string(*start + *count - 1));
  });
}

// What /proc/PID/status says of one process.
struct ProcessStatus {
  std::string name;
  std::uint64_t parent = 0;
  std::optional<std::uint64_t> uid_in_range;
};

std::optional<ProcessStatus> read_status(const std::filesystem::path& file, const IdRange& range) {
  // A process may end while it is looked at: then it uses no id any more.
  const auto text = read_text(file, nullptr);
  if (!text) return std::nullopt;
  ProcessStatus status;
  for (const auto line : split(*text, '\n')) {
    if (line.starts_with("Name:\t")) status.name = std::string(line.substr(6));
    if (line.starts_with("PPid:\t")) status.parent = number(line.substr(6)).value_or(0);
    if (!line.starts_with("Uid:")) continue;
    for (const auto field : split(line.substr(4), '\t')) {
      const auto uid = number(field);
      if (uid && range.contains(*uid)) {
        status.uid_in_range = *uid;
        break;
      }
    }
  }
  return status;
}

void check_processes(const std::filesystem::path& proc, const IdRange& range, const std::set<uid_t>& desk_ids,
                     Findings& findings) {
  std::error_code error;
  std::filesystem::directory_iterator entries(proc, error);
  if (error) {
    findings.unreadable.push_back(proc.native() + " cannot be listed: " + error.message());
    return;
  }
  std::map<std::uint64_t, ProcessStatus> processes;
  for (const auto& entry : entries) {
    const auto pid = number(entry.path().filename().native());
    if (!pid) continue;
    if (auto status = read_status(entry.path() / "status", range)) processes.emplace(*pid, std::move(*status));
  }
  // A desk's sandbox is a child of deskd: a running deskd's desks are not strangers to the
  // range, even when doctor was not told the config that names them.
  const auto started_by_deskd = [&](std::uint64_t pid) {
    for (std::size_t depth = 0; depth < processes.size(); ++depth) {
      const auto found = processes.find(pid);
      if (found == processes.end()) return false;
      if (depth > 0 && found->second.name == "deskd") return true;
      pid = found->second.parent;
    }
    return false;
  };
  std::size_t deskd_processes = 0;
  for (const auto& [pid, status] : processes) {
    if (!status.uid_in_range || desk_ids.contains(static_cast<uid_t>(*status.uid_in_range))) continue;
    if (started_by_deskd(pid)) {
      ++deskd_processes;
      continue;
    }
    findings.add("processes", std::to_string(pid) + " (uid " + std::to_string(*status.uid_in_range) + ")");
  }
  findings.deskd_processes = deskd_processes;
}

std::string listed(const std::string& kind, const std::vector<std::string>& items) {
  std::string text = kind + " ";
  for (std::size_t index = 0; index < items.size() && index < kShownPerKind; ++index) {
    text += (index == 0 ? "" : ", ") + items[index];
  }
  if (items.size() > kShownPerKind) text += " and " + std::to_string(items.size() - kShownPerKind) + " more";
  return text;
}

}  // namespace

sandbox::SupportCheck check_desk_id_range(std::uint32_t first, std::uint32_t count, const std::set<uid_t>& desk_ids,
                                          bool required, const HostIdFiles& files) {
  const IdRange range{first, std::uint64_t{first} + count};
  Findings findings;
  check_accounts(files.passwd, "users", "uid", range, findings);
  check_accounts(files.group, "groups", "gid", range, findings);
  check_subordinate_ranges(files.subuid, range, findings);
  check_subordinate_ranges(files.subgid, range, findings);
  check_processes(files.proc, range, desk_ids, findings);

  sandbox::SupportCheck check;
  check.name = "desk uid range";
  check.required = required;
  check.available = findings.kinds.empty() && findings.unreadable.empty();
  check.detail = std::to_string(range.first) + "..." + std::to_string(range.end - 1);
  if (findings.kinds.empty()) {
    check.detail += ": no user, group, subordinate id range or process uses it";
  } else {
    check.detail += " is in use:";
    for (std::size_t index = 0; index < findings.kinds.size(); ++index) {
      check.detail += (index == 0 ? " " : "; ") + listed(findings.kinds[index].first, findings.kinds[index].second);
    }
  }
  if (findings.deskd_processes > 0) {
    check.detail += " (" + std::to_string(findings.deskd_processes) + " process" +
                    (findings.deskd_processes == 1 ? "" : "es") + " of a running deskd's desks not counted)";
  }
  for (const auto& failure : findings.unreadable) check.detail += "; " + failure;
  if (!required) check.detail += " (deskd gives desks these ids only when it runs as root)";
  if (!check.available) {
    check.fix = findings.kinds.empty()
                    ? "run deskd doctor as root, so that every file can be read"
                    : "set [runner] desk_uid_first (and desk_uid_count) to a range that nothing on this host uses";
  }
  return check;
}

}  // namespace deskd::app
