#pragma once
// Who may use the control socket. The socket file's mode (0660, the configured group) is
// the first gate; every peer is then checked again with SO_PEERCRED, which the kernel fills
// in and a client cannot forge: deskd's own uid and root, the allowed uids, and members
// (primary or supplementary) of the allowed groups.

#include <sys/types.h>

#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"

namespace deskd::control {

struct PeerCredentials {
  pid_t pid = 0;
  uid_t uid = 0;
  gid_t gid = 0;
};

/// The credentials of the process at the other end of the Unix socket `fd`.
Result<PeerCredentials> peer_credentials(int fd);

/// The gid of the group `name`; not_found when there is no such group.
Result<gid_t> group_id(std::string_view name);

class PeerPolicy {
 public:
  PeerPolicy(uid_t own_uid, std::vector<uid_t> allowed_uids, std::vector<gid_t> allowed_groups);

  /// Whether `peer` may use the socket.
  bool allows(const PeerCredentials& peer) const;

  /// Whether `peer` is root or deskd's own uid: the operator, who always finds a place
  /// (the slots kept beyond max_clients) and is not held to the per-uid cap.
  bool is_privileged(const PeerCredentials& peer) const;

  /// "uid 1000 (asha)" — for the sender of a message and for refusals.
  static std::string describe(const PeerCredentials& peer);

 private:
  uid_t own_uid_;
  std::vector<uid_t> allowed_uids_;
  std::vector<gid_t> allowed_groups_;
};

}  // namespace deskd::control
