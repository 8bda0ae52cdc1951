#include "sandbox/desk_preparation.h"

#include <dirent.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <memory>

#include "base/unique_fd.h"
#include "policy/confinement.h"

namespace deskd::sandbox {
namespace {

constexpr int kDeepestFolder = 256;

struct Owner {
  uid_t uid;
  gid_t gid;
};

struct DirectoryCloser {
  void operator()(DIR* directory) const { ::closedir(directory); }
};

Error failed(int error_number, const std::filesystem::path& path, const std::string& what) {
  return Error::from_errno(error_number, "Handing " + path.native() + " to the desk's uid failed: " + what);
}

// Gives `fd` (opened O_PATH | O_NOFOLLOW) to `owner`, on that very inode.
int give(int fd, Owner owner) { return ::fchownat(fd, "", owner.uid, owner.gid, AT_EMPTY_PATH); }

// Hands over what is inside the folder `folder_fd` (opened for reading) that belonged to
// `previous`, folder by folder.
Result<void> hand_over_contents(int folder_fd, const std::filesystem::path& path, const struct stat& folder_status,
                                Owner previous, Owner owner, int depth) {
  if (depth > kDeepestFolder) return failed(ELOOP, path, "folders nest more than 256 deep");
  const int listing_fd = ::dup(folder_fd);
  if (listing_fd < 0) return failed(errno, path, "dup");
  std::unique_ptr<DIR, DirectoryCloser> listing(::fdopendir(listing_fd));
  if (!listing) {
    ::close(listing_fd);
    return failed(errno, path, "fdopendir");
  }
  while (const dirent* entry = ::readdir(listing.get())) {
    const std::string name = entry->d_name;
    if (name == "." || name == "..") continue;
    UniqueFd item(::openat(folder_fd, name.c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC));
    if (!item) continue;  // gone meanwhile
    struct stat status {};
    if (::fstat(item.get(), &status) != 0) return failed(errno, path / name, "fstat");
    if (status.st_dev != folder_status.st_dev || status.st_uid != previous.uid) continue;
    if (S_ISLNK(status.st_mode)) continue;  // the desk owns the folder, so it can replace the link anyway
    if (S_ISDIR(status.st_mode)) {
      UniqueFd folder(::openat(folder_fd, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
      struct stat opened {};
      if (!folder || ::fstat(folder.get(), &opened) != 0 || opened.st_ino != status.st_ino ||
          opened.st_dev != status.st_dev) {
        continue;  // swapped meanwhile: not the folder that was examined
      }
      if (::fchown(folder.get(), owner.uid, owner.gid) != 0) return failed(errno, path / name, "fchown");
      DESKD_RETURN_IF_ERROR(hand_over_contents(folder.get(), path / name, opened, previous, owner, depth + 1));
      continue;
    }
    if (status.st_nlink > 1) continue;  // another name for it may be outside the desk
    if (give(item.get(), owner) != 0) return failed(errno, path / name, "fchownat");
  }
  return success();
}

Result<void> hand_over_place(int desk_fd, const policy::WritablePlace& place, Owner owner) {
  const std::string name = place.path.filename().native();
  UniqueFd item(::openat(desk_fd, name.c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC));
  if (!item) return failed(errno, place.path, "open");
  struct stat status {};
  if (::fstat(item.get(), &status) != 0) return failed(errno, place.path, "fstat");
  if (status.st_uid == owner.uid && status.st_gid == owner.gid) return success();
  const bool folder = place.kind == policy::WritablePlace::Kind::folder;
  if (folder ? !S_ISDIR(status.st_mode) : !S_ISREG(status.st_mode)) {
    return failed(EINVAL, place.path, std::string("it is not a ") + (folder ? "folder" : "regular file"));
  }
  if (!folder) {
    if (status.st_nlink > 1) return failed(EMLINK, place.path, "it has other hard links, which may lie outside the desk");
    if (give(item.get(), owner) != 0) return failed(errno, place.path, "fchownat");
    return success();
  }
  UniqueFd opened(::openat(desk_fd, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  struct stat opened_status {};
  if (!opened || ::fstat(opened.get(), &opened_status) != 0 || opened_status.st_ino != status.st_ino) {
    return failed(errno != 0 ? errno : EAGAIN, place.path, "it changed while it was being opened");
  }
  if (::fchown(opened.get(), owner.uid, owner.gid) != 0) return failed(errno, place.path, "fchown");
  return hand_over_contents(opened.get(), place.path, opened_status, Owner{status.st_uid, status.st_gid}, owner, 0);
}

}  // namespace

Result<void> prepare_desk_for_sandbox(const SandboxSpec& spec) {
  DESKD_RETURN_IF_ERROR(policy::create_missing_writable_places(spec.confinement));
  if (::geteuid() != 0) return success();
  const auto& desk = spec.confinement.desk_directory();
  open_how how{};
  how.flags = O_PATH | O_DIRECTORY | O_CLOEXEC;
  how.resolve = RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;
  UniqueFd desk_fd(static_cast<int>(::syscall(SYS_openat2, AT_FDCWD, desk.c_str(), &how, sizeof how)));
  if (!desk_fd && errno == ENOSYS) desk_fd.reset(::open(desk.c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!desk_fd) return failed(errno, desk, "opening the desk folder without links");
  const Owner owner{spec.root_daemon_uid, spec.root_daemon_gid};
  for (const auto& place : spec.confinement.writable_places()) {
    DESKD_RETURN_IF_ERROR(hand_over_place(desk_fd.get(), place, owner));
  }
  return success();
}

Result<SandboxSpec> build_desk_sandbox_spec(const std::filesystem::path& desk_directory,
                                            std::span<const std::filesystem::path> hidden_paths,
                                            const SandboxSettings& settings) {
  DESKD_ASSIGN_OR_RETURN(auto confinement, policy::Confinement::create(desk_directory, hidden_paths));
  DESKD_ASSIGN_OR_RETURN(auto spec, build_sandbox_spec(confinement, settings));
  DESKD_RETURN_IF_ERROR(prepare_desk_for_sandbox(spec));
  return spec;
}

}  // namespace deskd::sandbox
