// cgroup v2 delegation: may deskd give each sandbox its own cgroup with memory.max and
// pids.max? Read-only: nothing is created, moved or enabled here.

#include <unistd.h>

#include <fstream>
#include <set>
#include <sstream>
#include <string_view>
#include <vector>

#include "sandbox/host_support.h"
#include "sandbox/host_support_internal.h"

namespace deskd::sandbox {
namespace {

constexpr const char* kFallback =
    "no delegated cgroup v2 subtree: resource limits use rlimits only (processes, memory by "
    "address space, file size, open files)";
constexpr const char* kDelegateFix =
    "systemd: Delegate=yes in the unit, or run under `systemd-run --user -p Delegate=yes deskd ...`";

struct CgroupMount {
  std::string root;         // the cgroup the mount shows, as /proc/self/cgroup names it
  std::string mount_point;
};

struct CgroupMounts {
  std::vector<CgroupMount> version2;  // /sys/fs/cgroup first when it is cgroup2
  bool version1_present = false;      // a hybrid host keeps memory and pids on cgroup v1
};

// mountinfo writes space, tab, newline and backslash as \ooo (octal).
std::string unescape_mountinfo(std::string_view field) {
  std::string text;
  for (std::size_t index = 0; index < field.size(); ++index) {
    if (field[index] == '\\' && index + 3 < field.size()) {
      const std::string octal(field.substr(index + 1, 3));
      if (octal.find_first_not_of("01234567") == std::string::npos) {
        text += static_cast<char>(std::stoi(octal, nullptr, 8));
        index += 3;
        continue;
      }
    }
    text += field[index];
  }
  return text;
}

// Fields of a mountinfo line: id parent major:minor root mount-point options
// [optional fields...] - fstype source super-options.
CgroupMounts cgroup_mounts() {
  CgroupMounts mounts;
  std::ifstream mountinfo("/proc/self/mountinfo");
  std::string line;
  while (std::getline(mountinfo, line)) {
    std::istringstream fields(line);
    std::vector<std::string> words;
    for (std::string word; fields >> word;) words.push_back(word);
    std::size_t separator = 6;
    while (separator < words.size() && words[separator] != "-") ++separator;
    if (words.size() < 5 || separator + 1 >= words.size()) continue;
    const std::string& type = words[separator + 1];
    if (type == "cgroup") mounts.version1_present = true;
    if (type != "cgroup2") continue;
    CgroupMount mount{unescape_mountinfo(words[3]), unescape_mountinfo(words[4])};
    if (mount.mount_point == "/sys/fs/cgroup") {
      mounts.version2.insert(mounts.version2.begin(), mount);
    } else {
      mounts.version2.push_back(mount);
    }
  }
  return mounts;
}

// This process's cgroup v2 path, from the "0::/path" line of /proc/self/cgroup.
std::optional<std::string> own_cgroup_path() {
  std::ifstream cgroups("/proc/self/cgroup");
  std::string line;
  while (std::getline(cgroups, line)) {
    if (line.rfind("0::", 0) != 0) continue;
    std::string path = line.substr(3);
    constexpr std::string_view kDeleted = " (deleted)";
    if (path.ends_with(kDeleted)) path.resize(path.size() - kDeleted.size());
    return path;
  }
  return std::nullopt;
}

std::set<std::string> words_in(const std::string& path) {
  std::istringstream line(host_support_internal::read_first_line(path).value_or(""));
  std::set<std::string> words;
  for (std::string word; line >> word;) words.insert(word);
  return words;
}

std::string joined(const std::set<std::string>& words) {
  std::string text;
  for (const auto& word : words) text += (text.empty() ? "" : " ") + word;
  return text.empty() ? "none" : text;
}

struct CgroupFinding {
  std::optional<std::string> directory;
  std::string detail;
  std::string fix;
};

CgroupFinding not_delegated(const std::string& reason, const std::string& fix) {
  return {std::nullopt, reason + "; " + kFallback, fix};
}

CgroupFinding find_delegated_cgroup() {
  const CgroupMounts mounts = cgroup_mounts();
  const std::string unified_fix =
      "boot with systemd.unified_cgroup_hierarchy=1 so that memory and pids are cgroup v2 "
      "controllers; then " + std::string(kDelegateFix);
  if (mounts.version2.empty()) return not_delegated("no cgroup v2 is mounted", unified_fix);
  const auto path = own_cgroup_path();
  if (!path) return not_delegated("this process is in no cgroup v2 (no 0:: line in /proc/self/cgroup)", kDelegateFix);

  std::optional<std::string> directory;
  for (const CgroupMount& mount : mounts.version2) {
    // The mount shows the subtree under mount.root; this process's cgroup must lie in it.
    if (mount.root == "/") {
      directory = mount.mount_point + (*path == "/" ? "" : *path);
    } else if (*path == mount.root || path->starts_with(mount.root + "/")) {
      directory = mount.mount_point + path->substr(mount.root.size());
    }
    if (directory) break;
  }
  if (!directory) {
    return not_delegated("this process's cgroup " + *path + " is outside every cgroup v2 mount", kDelegateFix);
  }

  const std::set<std::string> controllers = words_in(*directory + "/cgroup.controllers");
  if (!controllers.contains("memory") || !controllers.contains("pids")) {
    const bool hybrid = mounts.version1_present;
    return not_delegated(*directory + " offers the controllers '" + joined(controllers) +
                             "', without memory and pids" +
                             (hybrid ? " (this hybrid host keeps them on cgroup v1)" : ""),
                         hybrid ? unified_fix : kDelegateFix);
  }
  for (const char* file : {"", "/cgroup.subtree_control", "/cgroup.procs"}) {
    if (access((*directory + file).c_str(), W_OK) != 0) {
      return not_delegated(*directory + file + " is not writable by uid " + std::to_string(geteuid()),
                           kDelegateFix);
    }
  }
  const std::set<std::string> enabled = words_in(*directory + "/cgroup.subtree_control");
  const bool both_enabled = enabled.contains("memory") && enabled.contains("pids");
  return {directory,
          "delegated: " + *directory + " (memory and pids " +
              (both_enabled ? "enabled" : "can be enabled") + " for child cgroups)",
          ""};
}

}  // namespace

namespace host_support_internal {

SupportCheck check_cgroup_delegation() {
  CgroupFinding finding = find_delegated_cgroup();
  return SupportCheck{"cgroup v2 delegation", finding.directory.has_value(), false,
                      std::move(finding.detail), std::move(finding.fix)};
}

}  // namespace host_support_internal

std::optional<std::string> delegated_cgroup_directory() { return find_delegated_cgroup().directory; }

}  // namespace deskd::sandbox
