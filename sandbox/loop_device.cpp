#include "sandbox/loop_device.h"

#include <dirent.h>
#include <fcntl.h>
#include <linux/loop.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <thread>

namespace deskd::sandbox {
namespace {

std::string read_small_file(const std::string& path) {
  UniqueFd file(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!file) return {};
  char buffer[4096];
  const ssize_t got = retry_on_eintr([&] { return ::read(file.get(), buffer, sizeof buffer); });
  if (got <= 0) return {};
  std::string text(buffer, static_cast<std::size_t>(got));
  while (!text.empty() && text.back() == '\n') text.pop_back();
  return text;
}

}  // namespace

bool loop_device_backs(const std::string& device, const struct stat& image_status) {
  // O_RDONLY without O_EXCL: looking never takes the device from anyone.
  UniqueFd loop(::open(device.c_str(), O_RDONLY | O_CLOEXEC));
  if (!loop) return false;
  loop_info64 info{};
  if (::ioctl(loop.get(), LOOP_GET_STATUS64, &info) != 0) return false;  // ENXIO: attached to nothing
  return info.lo_device == static_cast<__u64>(image_status.st_dev) &&
         info.lo_inode == static_cast<__u64>(image_status.st_ino);
}

Result<std::vector<std::string>> loop_devices_backed_by(const std::string& image, const struct stat& image_status) {
  // sysfs names each device's backing file without opening the device; the path is only a
  // first sieve (it is what the attacher saw), the inode decides.
  DIR* folder = ::opendir("/sys/block");
  if (folder == nullptr) return Error::from_errno(errno, "Looking for the loop devices of " + image + " failed: opening /sys/block");
  std::vector<std::string> devices;
  while (const dirent* entry = ::readdir(folder)) {
    const std::string name = entry->d_name;
    if (name.rfind("loop", 0) != 0) continue;
    if (read_small_file("/sys/block/" + name + "/loop/backing_file") != image) continue;
    if (loop_device_backs("/dev/" + name, image_status)) devices.push_back("/dev/" + name);
  }
  ::closedir(folder);
  return devices;
}

Result<AttachedLoopDevice> attach_loop_device(int backing, const std::string& image) {
  UniqueFd control(::open("/dev/loop-control", O_RDWR | O_CLOEXEC));
  if (!control) return Error::from_errno(errno, "Attaching " + image + " to a loop device failed: opening /dev/loop-control");
  for (int attempt = 0; attempt < 8; ++attempt) {
    const int number = ::ioctl(control.get(), LOOP_CTL_GET_FREE);
    if (number < 0) return Error::from_errno(errno, "Attaching " + image + " to a loop device failed: finding a free one");
    const std::string device = "/dev/loop" + std::to_string(number);
    UniqueFd loop(::open(device.c_str(), O_RDWR | O_CLOEXEC));
    if (!loop) return Error::from_errno(errno, "Attaching " + image + " to a loop device failed: opening " + device);
    loop_config config{};
    config.fd = static_cast<__u32>(backing);
    config.info.lo_flags = LO_FLAGS_AUTOCLEAR;
    if (::ioctl(loop.get(), LOOP_CONFIGURE, &config) != 0) {
      if (errno == EBUSY) continue;  // taken meanwhile by someone else
      return Error::from_errno(errno, "Attaching " + image + " to " + device + " failed");
    }
    return AttachedLoopDevice{device, std::move(loop)};
  }
  return Error::from_errno(EBUSY, "Attaching " + image + " to a loop device failed: every free one was taken while trying");
}

Result<void> make_sure_loop_device_detached(const std::string& device, const std::string& image,
                                            const struct stat& image_status, int milliseconds) {
  // LO_FLAGS_AUTOCLEAR detaches the device when the unmount drops its last user, which the
  // kernel may finish just after umount2 returns.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(milliseconds);
  while (loop_device_backs(device, image_status)) {
    if (std::chrono::steady_clock::now() >= deadline) {
      UniqueFd loop(::open(device.c_str(), O_RDONLY | O_CLOEXEC));
      if (loop) (void)::ioctl(loop.get(), LOOP_CLR_FD, 0);
      loop.reset();
      if (!loop_device_backs(device, image_status)) return success();
      return Error::make(ErrorCode::system, device + " stays attached to " + image +
                                                " after its mounts were taken down: something else still holds it (a "
                                                "mount in another namespace, or a process); it detaches itself once "
                                                "that lets go.");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return success();
}

}  // namespace deskd::sandbox
