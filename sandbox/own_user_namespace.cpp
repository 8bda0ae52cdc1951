#include "sandbox/own_user_namespace.h"

#include <fstream>
#include <sstream>

namespace deskd::sandbox {

Result<OwnUserNamespace> own_user_namespace() {
  std::ifstream file("/proc/self/uid_map");
  if (!file) return Error::make(ErrorCode::system, "/proc/self/uid_map cannot be read");
  OwnUserNamespace found;
  std::string line;
  int ranges = 0;
  bool identity = false;  // the one range maps every id to itself
  while (std::getline(file, line)) {
    std::istringstream fields(line);
    unsigned long long inside = 0, outside = 0, count = 0;
    if (!(fields >> inside >> outside >> count)) continue;
    identity = inside == 0 && outside == 0 && count == 4294967295ULL;
    ++ranges;
    found.uid_map += (found.uid_map.empty() ? "" : "; ") + std::to_string(inside) + " " + std::to_string(outside) +
                     " " + std::to_string(count);
  }
  if (ranges == 0) return Error::make(ErrorCode::system, "/proc/self/uid_map is empty");
  found.host = ranges == 1 && identity;
  return found;
}

SupportCheck check_own_user_namespace() {
  SupportCheck check{"deskd's own user namespace", true, false, "", ""};
  auto found = own_user_namespace();
  if (!found.ok()) {
    check.available = false;
    check.detail = found.error().what;
    return check;
  }
  check.detail = found->host ? "the host's (uid_map " + found->uid_map + ")"
                             : "a container's or a unit's (uid_map " + found->uid_map + ")";
  return check;
}

}  // namespace deskd::sandbox
