#pragma once
// A temporary desk under /var/tmp for the benchmarks that start sandboxes, as the tests make
// one; removed when it goes away.

#include <stdlib.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <system_error>

namespace deskd::bench {

class TemporaryDesk {
 public:
  /// Throws std::runtime_error when the folder cannot be made.
  TemporaryDesk() {
    char pattern[] = "/var/tmp/deskd-bench-XXXXXX";
    if (::mkdtemp(pattern) == nullptr) throw std::runtime_error(std::string("mkdtemp: ") + std::strerror(errno));
    root_ = pattern;
    namespace fs = std::filesystem;
    // The sandbox's unprivileged identity must be able to reach the desk folder.
    fs::permissions(root_, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                               fs::perms::others_read | fs::perms::others_exec);
    fs::create_directories(desk());
  }
  ~TemporaryDesk() {
    std::error_code ignored;
    std::filesystem::remove_all(root_, ignored);
  }
  TemporaryDesk(const TemporaryDesk&) = delete;
  TemporaryDesk& operator=(const TemporaryDesk&) = delete;
  std::filesystem::path desk() const { return root_ / "desk"; }

 private:
  std::filesystem::path root_;
};

}  // namespace deskd::bench
