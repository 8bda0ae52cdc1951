#include "sandbox/desk_preparation.h"

#include <ftw.h>
#include <unistd.h>

#include <cerrno>

namespace deskd::sandbox {
namespace {

// nftw offers no context pointer; the walk runs under a lock-free per-thread slot.
thread_local uid_t owner_uid = 0;
thread_local gid_t owner_gid = 0;
thread_local int first_error = 0;

int hand_over(const char* path, const struct stat*, int, FTW*) {
  if (::lchown(path, owner_uid, owner_gid) != 0 && first_error == 0) first_error = errno;
  return 0;
}

}  // namespace

Result<void> prepare_desk_for_sandbox(const SandboxSpec& spec) {
  DESKD_RETURN_IF_ERROR(policy::create_missing_writable_places(spec.confinement));
  if (::geteuid() != 0) return success();
  for (const auto& place : spec.confinement.writable_places()) {
    owner_uid = spec.root_daemon_uid;
    owner_gid = spec.root_daemon_gid;
    first_error = 0;
    if (::nftw(place.path.c_str(), hand_over, 32, FTW_PHYS | FTW_MOUNT) != 0 || first_error != 0) {
      return Error::from_errno(first_error != 0 ? first_error : errno,
                               "Handing " + place.path.native() + " to the sandbox's uid " +
                                   std::to_string(owner_uid) + " failed");
    }
  }
  return success();
}

}  // namespace deskd::sandbox
