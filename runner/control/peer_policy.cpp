#include "runner/control/peer_policy.h"

#include <grp.h>
#include <pwd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

namespace deskd::control {

Result<PeerCredentials> peer_credentials(int fd) {
  struct ucred credentials {};
  socklen_t size = sizeof credentials;
  if (::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &credentials, &size) != 0) {
    return Error::from_errno(errno, "getsockopt(SO_PEERCRED) on the control socket");
  }
  return PeerCredentials{credentials.pid, credentials.uid, credentials.gid};
}

Result<gid_t> group_id(std::string_view name) {
  const std::string copy(name);
  std::vector<char> buffer(16384);
  struct group entry {};
  struct group* found = nullptr;
  const int error = ::getgrnam_r(copy.c_str(), &entry, buffer.data(), buffer.size(), &found);
  if (error != 0) return Error::from_errno(error, "looking up the group '" + copy + "'");
  if (found == nullptr) return Error::make(ErrorCode::not_found, "There is no group '" + copy + "'.");
  return found->gr_gid;
}

PeerPolicy::PeerPolicy(uid_t own_uid, std::vector<uid_t> allowed_uids, std::vector<gid_t> allowed_groups)
    : own_uid_(own_uid), allowed_uids_(std::move(allowed_uids)), allowed_groups_(std::move(allowed_groups)) {}

bool PeerPolicy::allows(const PeerCredentials& peer) const {
  // Root could read the daemon's state anyway; refusing it would protect nothing.
  if (peer.uid == own_uid_ || peer.uid == 0) return true;
  if (std::find(allowed_uids_.begin(), allowed_uids_.end(), peer.uid) != allowed_uids_.end()) return true;
  if (allowed_groups_.empty()) return false;
  if (std::find(allowed_groups_.begin(), allowed_groups_.end(), peer.gid) != allowed_groups_.end()) return true;
  // Supplementary groups come from the group database, as login would have set them.
  std::vector<char> buffer(16384);
  struct passwd entry {};
  struct passwd* found = nullptr;
  if (::getpwuid_r(peer.uid, &entry, buffer.data(), buffer.size(), &found) != 0 || found == nullptr) return false;
  int count = 64;
  std::vector<gid_t> groups(static_cast<std::size_t>(count));
  if (::getgrouplist(found->pw_name, peer.gid, groups.data(), &count) < 0) {
    groups.resize(static_cast<std::size_t>(count));
    if (::getgrouplist(found->pw_name, peer.gid, groups.data(), &count) < 0) return false;
  }
  groups.resize(static_cast<std::size_t>(count));
  for (gid_t group : groups) {
    if (std::find(allowed_groups_.begin(), allowed_groups_.end(), group) != allowed_groups_.end()) return true;
  }
  return false;
}

bool PeerPolicy::is_privileged(const PeerCredentials& peer) const { return peer.uid == own_uid_ || peer.uid == 0; }

std::string PeerPolicy::describe(const PeerCredentials& peer) {
  std::string text = "uid " + std::to_string(peer.uid);
  std::vector<char> buffer(16384);
  struct passwd entry {};
  struct passwd* found = nullptr;
  if (::getpwuid_r(peer.uid, &entry, buffer.data(), buffer.size(), &found) == 0 && found != nullptr) {
    text += " (" + std::string(found->pw_name) + ")";
  }
  return text;
}

}  // namespace deskd::control
