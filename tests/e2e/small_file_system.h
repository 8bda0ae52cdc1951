#pragma once
// A real full disk for the end-to-end tests: a small ext4 image under /var/tmp, loop-mounted
// where a test wants it, which the test fills until the kernel answers ENOSPC. Needs root,
// mkfs.ext4 and loop devices; mounted() says whether they were there.

#include <string>

namespace deskd::e2e {

class SmallFileSystem {
 public:
  /// Makes an ext4 image of `megabytes` and mounts it on `mount_point` (created if needed).
  SmallFileSystem(std::string mount_point, int megabytes);
  /// Unmounts it (lazily if something still holds it open) and removes the image.
  ~SmallFileSystem();
  SmallFileSystem(const SmallFileSystem&) = delete;
  SmallFileSystem& operator=(const SmallFileSystem&) = delete;

  bool mounted() const { return mounted_; }
  /// Why it is not mounted.
  const std::string& why_not() const { return why_not_; }
  /// Writes a filler file until the file system refuses more (ENOSPC), flushing between
  /// rounds so that no delayed allocation leaves room behind; false if it never refused.
  bool fill();
  /// Removes the filler: room again.
  void make_room();

 private:
  std::string mount_point_;
  std::string image_;
  bool mounted_ = false;
  std::string why_not_;
};

}  // namespace deskd::e2e
