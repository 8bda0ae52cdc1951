#pragma once
// Which user namespace deskd itself runs in. Kubernetes silently ignores `hostUsers: false`
// on a runtime without user-namespace support, so a deployment that counts on one must be
// able to see whether it is really there: /proc/self/uid_map of the host's namespace maps
// every id to itself ("0 0 4294967295").

#include <string>

#include "base/result.h"
#include "sandbox/host_support.h"

namespace deskd::sandbox {

struct OwnUserNamespace {
  bool host = false;    ///< the host's (initial) user namespace, or one whose root is the host's root
  std::string uid_map;  ///< /proc/self/uid_map, its lines joined with "; "
};

/// Reads /proc/self/uid_map.
Result<OwnUserNamespace> own_user_namespace();

/// For `deskd doctor`: where deskd runs; never required.
SupportCheck check_own_user_namespace();

}  // namespace deskd::sandbox
