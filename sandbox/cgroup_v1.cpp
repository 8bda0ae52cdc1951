#include "sandbox/cgroup_v1.h"

#include <unistd.h>

#include <fstream>
#include <map>
#include <mutex>
#include <sstream>
#include <vector>

namespace deskd::sandbox::cgroup_v1 {
namespace {

bool has_word(const std::string& list, const std::string& word) {
  std::stringstream words(list);
  for (std::string each; std::getline(words, each, ',');) {
    if (each == word) return true;
  }
  return false;
}

struct Mount {
  std::string root;
  std::string mount_point;
};

// A /proc/self file's text, read once per process: own_folder() is asked for a few
// controllers in a row (cgroup_limits.cpp keeps its answer for the life of the process).
const std::string& text_of(const char* path) {
  static std::mutex mutex;
  static std::map<std::string, std::string> texts;
  std::lock_guard lock(mutex);
  auto [entry, inserted] = texts.try_emplace(path);
  if (inserted) {
    std::ifstream file(path);
    std::stringstream text;
    text << file.rdbuf();
    entry->second = text.str();
  }
  return entry->second;
}

// The v1 mount of `controller`: a "cgroup" line of mountinfo whose super options name it.
std::optional<Mount> mount_of(const std::string& controller) {
  std::stringstream mountinfo(text_of("/proc/self/mountinfo"));
  for (std::string line; std::getline(mountinfo, line);) {
    const std::size_t separator = line.find(" - ");
    if (separator == std::string::npos) continue;
    std::stringstream before(line.substr(0, separator));
    std::stringstream after(line.substr(separator + 3));
    std::string id, parent, device, root, mount_point, type, source, options;
    before >> id >> parent >> device >> root >> mount_point;
    after >> type >> source >> options;
    if (type == "cgroup" && has_word(options, controller)) return Mount{root, mount_point};
  }
  return std::nullopt;
}

// This process's path in the v1 hierarchy holding `controller` ("4:memory:/a/b").
std::optional<std::string> path_in(const std::string& controller) {
  std::stringstream cgroups(text_of("/proc/self/cgroup"));
  for (std::string line; std::getline(cgroups, line);) {
    const std::size_t first = line.find(':');
    const std::size_t second = first == std::string::npos ? first : line.find(':', first + 1);
    if (second == std::string::npos) continue;
    if (has_word(line.substr(first + 1, second - first - 1), controller)) return line.substr(second + 1);
  }
  return std::nullopt;
}

}  // namespace

std::optional<std::string> own_folder(const std::string& controller) {
  if (::geteuid() != 0) return std::nullopt;
  const auto mount = mount_of(controller);
  const auto path = path_in(controller);
  if (!mount || !path) return std::nullopt;
  std::string relative = *path;
  if (mount->root != "/") {
    if (relative != mount->root && relative.rfind(mount->root + "/", 0) != 0) return std::nullopt;
    relative = relative.substr(mount->root.size());
  }
  std::string folder = mount->mount_point + (relative == "/" ? "" : relative);
  if (::access(folder.c_str(), W_OK) != 0) return std::nullopt;
  return folder;
}

}  // namespace deskd::sandbox::cgroup_v1
