#include "runner/daemon/owner_rights.h"

#include <linux/capability.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <optional>
#include <thread>

#include "policy/path_resolution.h"

namespace deskd::tools {
namespace {

// Raw system calls on purpose: glibc's setgroups (and setuid family) change every thread of
// the process; the kernel's calls change only the calling one, which is the point here.
Result<void> take_identity(const FileOwner& owner) {
  if (::syscall(SYS_setgroups, 0, nullptr) != 0) return Error::from_errno(errno, "Dropping the supplementary groups failed");
  ::syscall(SYS_setfsgid, owner.gid);
  ::syscall(SYS_setfsuid, owner.uid);
  // setfs*id answer with the previous id whatever happened; asking with -1 tells the current.
  const auto fsuid = static_cast<uid_t>(::syscall(SYS_setfsuid, static_cast<uid_t>(-1)));
  const auto fsgid = static_cast<gid_t>(::syscall(SYS_setfsgid, static_cast<gid_t>(-1)));
  if (fsuid != owner.uid || fsgid != owner.gid) {
    return Error::make(ErrorCode::system, "Taking the file owner's identity (uid " + std::to_string(owner.uid) +
                                              ", gid " + std::to_string(owner.gid) + ") failed.");
  }
  __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[2] = {};
  if (::syscall(SYS_capget, &header, data) != 0) return Error::from_errno(errno, "Reading the thread's capabilities failed");
  data[0].effective = 0;
  data[1].effective = 0;
  if (::syscall(SYS_capset, &header, data) != 0) {
    return Error::from_errno(errno, "Giving up the thread's capabilities failed");
  }
  return success();
}

}  // namespace

Result<FileOwner> proposal_writer(const std::filesystem::path& target, const std::filesystem::path& desk_directory) {
  struct stat status {};
  if (::lstat(target.c_str(), &status) == 0) return FileOwner{status.st_uid, status.st_gid};
  if (errno != ENOENT) {
    return Error::from_errno(errno, policy::printable_path(target.native()) + " cannot be examined");
  }
  if (::stat(desk_directory.c_str(), &status) != 0) {
    return Error::from_errno(errno, "The desk folder " + policy::printable_path(desk_directory.native()) +
                                        " cannot be examined");
  }
  return FileOwner{status.st_uid, status.st_gid};
}

Result<void> run_as_owner(const FileOwner& owner, const std::function<Result<void>()>& work) {
  std::optional<Result<void>> outcome;
  std::thread worker([&] {
    if (::geteuid() == 0) {
      if (auto taken = take_identity(owner); !taken.ok()) {
        outcome.emplace(std::move(taken).error());
        return;
      }
    }
    outcome.emplace(work());
  });
  worker.join();
  return std::move(*outcome);
}

}  // namespace deskd::tools
