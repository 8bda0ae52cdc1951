#include "sandbox/disk_quota.h"

#include <fcntl.h>
#include <linux/loop.h>
#include <spawn.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <string>
#include <vector>

#include "base/unique_fd.h"

namespace deskd::sandbox {
namespace {

namespace fs = std::filesystem;

Error failed(int error_number, const std::string& step) {
  return Error::from_errno(error_number, "Giving the desk's writable places their disk quota failed: " + step);
}

// Runs a helper program with an empty environment and waits for it.
Result<void> run_program(const std::vector<std::string>& command) {
  std::vector<char*> arguments;
  for (const auto& each : command) arguments.push_back(const_cast<char*>(each.c_str()));
  arguments.push_back(nullptr);
  char* const environment[] = {const_cast<char*>("PATH=/usr/sbin:/usr/bin:/sbin:/bin"), nullptr};
  pid_t child = -1;
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
  const int spawned = ::posix_spawn(&child, arguments[0], &actions, nullptr, arguments.data(), environment);
  posix_spawn_file_actions_destroy(&actions);
  if (spawned != 0) return failed(spawned, "starting " + command[0]);
  int status = 0;
  if (retry_on_eintr([&] { return ::waitpid(child, &status, 0); }) != child) return failed(errno, "waiting for " + command[0]);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    return failed(EIO, command[0] + " exited with status " + std::to_string(WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status)));
  }
  return success();
}

bool is_mount_point(const fs::path& path) {
  struct stat here {}, parent {};
  if (::stat(path.c_str(), &here) != 0 || ::stat(path.parent_path().c_str(), &parent) != 0) return false;
  return here.st_dev != parent.st_dev;
}

Result<void> make_image(const fs::path& image, const DiskQuota& quota, uid_t uid, gid_t gid) {
  UniqueFd file(::open(image.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600));
  if (!file) return failed(errno, "creating " + image.native());
  if (::ftruncate(file.get(), static_cast<off_t>(quota.bytes)) != 0) {
    const int error_number = errno;
    ::unlink(image.c_str());
    return failed(error_number, "sizing " + image.native());
  }
  file.reset();
  auto made = run_program({"/sbin/mkfs.ext4", "-q", "-F", "-m", "0", "-N", std::to_string(quota.inodes), "-E",
                           "root_owner=" + std::to_string(uid) + ":" + std::to_string(gid), image.native()});
  if (!made.ok()) ::unlink(image.c_str());
  return made;
}

// Attaches `image` to a free loop device (detached again once unmounted) and mounts it.
Result<void> mount_image(const fs::path& image, const fs::path& mount_point) {
  UniqueFd backing(::open(image.c_str(), O_RDWR | O_CLOEXEC | O_NOFOLLOW));
  if (!backing) return failed(errno, "opening " + image.native());
  UniqueFd control(::open("/dev/loop-control", O_RDWR | O_CLOEXEC));
  if (!control) return failed(errno, "opening /dev/loop-control");
  for (int attempt = 0; attempt < 8; ++attempt) {
    const int number = ::ioctl(control.get(), LOOP_CTL_GET_FREE);
    if (number < 0) return failed(errno, "finding a free loop device");
    const std::string device = "/dev/loop" + std::to_string(number);
    UniqueFd loop(::open(device.c_str(), O_RDWR | O_CLOEXEC));
    if (!loop) return failed(errno, "opening " + device);
    loop_config config{};
    config.fd = static_cast<__u32>(backing.get());
    config.info.lo_flags = LO_FLAGS_AUTOCLEAR;
    if (::ioctl(loop.get(), LOOP_CONFIGURE, &config) != 0) {
      if (errno == EBUSY) continue;  // taken meanwhile by someone else
      return failed(errno, "attaching " + image.native() + " to " + device);
    }
    if (::mount(device.c_str(), mount_point.c_str(), "ext4", MS_NOSUID | MS_NODEV, "") != 0) {
      return failed(errno, "mounting " + device + " on " + mount_point.native());
    }
    return success();
  }
  return failed(EBUSY, "every free loop device was taken while trying");
}

// The place inside the image, created for the desk (and filled from the host's the first
// time), then bound over the host's.
Result<void> bind_place(const policy::WritablePlace& place, const fs::path& inside, uid_t uid, gid_t gid) {
  const bool folder = place.kind == policy::WritablePlace::Kind::folder;
  struct stat status {};
  if (::lstat(inside.c_str(), &status) != 0) {
    const int made = folder ? ::mkdir(inside.c_str(), 0755)
                            : [&] {
                                const int fd = ::open(inside.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
                                return fd >= 0 ? ::close(fd) : -1;
                              }();
    if (made != 0) return failed(errno, "creating " + inside.native());
    if (::lchown(inside.c_str(), uid, gid) != 0) return failed(errno, "giving " + inside.native() + " to the desk");
    // What the desk had so far moves in with it; links are copied as links.
    const std::string from = folder ? place.path.native() + "/." : place.path.native();
    DESKD_RETURN_IF_ERROR(run_program({"/bin/cp", "-a", "--no-dereference", from, inside.native()}));
  }
  if (::mount(inside.c_str(), place.path.c_str(), nullptr, MS_BIND, nullptr) != 0) {
    return failed(errno, "binding " + inside.native() + " over " + place.path.native());
  }
  if (::mount(nullptr, place.path.c_str(), nullptr, MS_BIND | MS_REMOUNT | MS_NOSUID | MS_NODEV, nullptr) != 0) {
    return failed(errno, "making " + place.path.native() + " nosuid and nodev");
  }
  return success();
}

}  // namespace

Result<void> give_places_a_quota(const SandboxSpec& spec, const fs::path& folder, const DiskQuota& quota) {
  if (::geteuid() != 0) {
    return Error::make(ErrorCode::unsupported,
                       "A disk quota needs a root deskd: it mounts a file system image for each desk. Run deskd as "
                       "root, or write disk_quota_mb = \"none\" to accept a desk that can fill its file system.");
  }
  const fs::path image = folder / "places.img";
  const fs::path mount_point = folder / "places";
  if (::mkdir(folder.c_str(), 0700) != 0 && errno != EEXIST) return failed(errno, "creating " + folder.native());
  if (::mkdir(mount_point.c_str(), 0700) != 0 && errno != EEXIST) return failed(errno, "creating " + mount_point.native());
  if (!is_mount_point(mount_point)) {
    if (::access(image.c_str(), F_OK) != 0) {
      DESKD_RETURN_IF_ERROR(make_image(image, quota, spec.root_daemon_uid, spec.root_daemon_gid));
    }
    DESKD_RETURN_IF_ERROR(mount_image(image, mount_point));
  }
  struct stat image_root {};
  if (::stat(mount_point.c_str(), &image_root) != 0) return failed(errno, "examining " + mount_point.native());
  for (const auto& place : spec.confinement.writable_places()) {
    struct stat status {};
    if (::stat(place.path.c_str(), &status) == 0 && status.st_dev == image_root.st_dev) continue;  // bound already
    DESKD_RETURN_IF_ERROR(bind_place(place, mount_point / place.path.filename(), spec.root_daemon_uid, spec.root_daemon_gid));
  }
  return success();
}

}  // namespace deskd::sandbox
