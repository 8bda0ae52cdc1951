#include "e2e/small_file_system.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <vector>

namespace deskd::e2e {

namespace fs = std::filesystem;

namespace {

// Runs a command of the test's own making (no user input reaches it); true on status 0.
bool run(const std::string& command) { return std::system((command + " >/dev/null 2>&1").c_str()) == 0; }

std::string filler_path(const std::string& mount_point) { return mount_point + "/filler"; }

}  // namespace

SmallFileSystem::SmallFileSystem(std::string mount_point, int megabytes) : mount_point_(std::move(mount_point)) {
  if (::geteuid() != 0) {
    why_not_ = "mounting a file system needs root";
    return;
  }
  char pattern[] = "/var/tmp/deskd-small-fs-XXXXXX";
  const int fd = ::mkstemp(pattern);
  if (fd < 0) {
    why_not_ = "no image file under /var/tmp";
    return;
  }
  ::close(fd);
  image_ = pattern;
  std::error_code error;
  fs::resize_file(image_, static_cast<std::uintmax_t>(megabytes) * 1024 * 1024, error);
  fs::create_directories(mount_point_, error);
  // No reserved blocks: root (deskd in these tests) must meet the same full disk as anyone.
  if (!run("mkfs.ext4 -q -F -m 0 " + image_)) {
    why_not_ = "mkfs.ext4 failed (is e2fsprogs installed?)";
    return;
  }
  if (!run("mount -o loop " + image_ + " " + mount_point_)) {
    why_not_ = "mount -o loop failed (no loop devices, or not allowed here)";
    return;
  }
  ::chmod(mount_point_.c_str(), 0755);
  mounted_ = true;
}

SmallFileSystem::~SmallFileSystem() {
  if (mounted_ && !run("umount " + mount_point_)) (void)run("umount -l " + mount_point_);
  if (!image_.empty()) ::unlink(image_.c_str());
}

bool SmallFileSystem::fill() {
  const int fd = ::open(filler_path(mount_point_).c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
  if (fd < 0) return errno == ENOSPC;
  const std::vector<char> chunk(64 * 1024, 'f');
  bool refused = false;
  // Smaller and smaller pieces, until not even one byte goes in after a flush.
  for (std::size_t size = chunk.size(); size > 0; size /= 4) {
    for (int round = 0; round < 4; ++round) {
      while (::write(fd, chunk.data(), size) == static_cast<ssize_t>(size)) {
      }
      refused = refused || errno == ENOSPC;
      ::fsync(fd);
    }
  }
  ::close(fd);
  return refused;
}

void SmallFileSystem::make_room() { ::unlink(filler_path(mount_point_).c_str()); }

}  // namespace deskd::e2e
