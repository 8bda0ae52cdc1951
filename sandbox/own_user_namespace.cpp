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
  bool identity = false;     // the one range maps every id to itself
  bool root_is_root = false;  // some range maps root inside to the host's root
  while (std::getline(file, line)) {
    std::istringstream fields(line);
    unsigned long long inside = 0, outside = 0, count = 0;
    if (!(fields >> inside >> outside >> count)) continue;
    identity = inside == 0 && outside == 0 && count == 4294967295ULL;
    root_is_root = root_is_root || (inside == 0 && outside == 0 && count > 0);
    ++ranges;
    found.uid_map += (found.uid_map.empty() ? "" : "; ") + std::to_string(inside) + " " + std::to_string(outside) +
                     " " + std::to_string(count);
  }
  if (ranges == 0) return Error::make(ErrorCode::system, "/proc/self/uid_map is empty");
  // A namespace whose root is the host's root keeps nothing from the host.
  found.host = (ranges == 1 && identity) || root_is_root;
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
