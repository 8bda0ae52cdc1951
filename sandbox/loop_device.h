#pragma once
// Loop devices for the disk quota's images (root only): finding the ones a file is already
// attached to, so a restarted deskd adopts them instead of attaching a second device to the
// same image (two loop devices on one ext4 image mounted at once would corrupt it), attaching
// a new one that detaches itself once unmounted, and making sure it did.

#include <sys/stat.h>

#include <string>
#include <vector>

#include "base/result.h"
#include "base/unique_fd.h"

namespace deskd::sandbox {

/// A loop device just attached; `hold` keeps it attached until the caller has mounted it.
struct AttachedLoopDevice {
  std::string path;  ///< "/dev/loopN"
  UniqueFd hold;
};

/// The loop devices ("/dev/loopN") attached to the file `image` (an absolute, resolved
/// path), confirmed by its device and inode number `image_status`.
Result<std::vector<std::string>> loop_devices_backed_by(const std::string& image, const struct stat& image_status);

/// Attaches the open file `backing` (for the error sentences: `image`) to a free loop
/// device with LO_FLAGS_AUTOCLEAR: it detaches itself when its last user lets go.
Result<AttachedLoopDevice> attach_loop_device(int backing, const std::string& image);

/// Whether `device` is still attached to the file with `image_status`'s device and inode.
bool loop_device_backs(const std::string& device, const struct stat& image_status);

/// Waits up to `milliseconds` for `device` to stop backing the image, then detaches it
/// (LOOP_CLR_FD: the kernel defers that to its last user if it still has one). Fails when
/// it stays attached, naming the device and the image.
Result<void> make_sure_loop_device_detached(const std::string& device, const std::string& image,
                                            const struct stat& image_status, int milliseconds);

}  // namespace deskd::sandbox
