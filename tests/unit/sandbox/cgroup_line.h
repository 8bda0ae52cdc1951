#pragma once
// For the sandbox tests that read a sandbox's /proc/self/cgroup: its memory line.

#include <string>

namespace deskd::sandbox::cgroup_test {

/// The line of /proc/self/cgroup text for the v1 memory hierarchy (or v2's unified one);
/// "" when there is none.
inline std::string memory_cgroup_line(const std::string& text) {
  for (const char* key : {":memory:", "0::"}) {
    const std::size_t at = text.find(key);
    if (at != std::string::npos) return text.substr(at, text.find('\n', at) - at);
  }
  return "";
}

}  // namespace deskd::sandbox::cgroup_test
