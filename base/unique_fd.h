#pragma once
// UniqueFd: owns one file descriptor and closes it exactly once.

#include <cerrno>
#include <utility>

namespace deskd {

/// Calls `operation` again while it fails with EINTR; returns its last result.
template <typename Operation>
auto retry_on_eintr(Operation&& operation) {
  for (;;) {
    auto result = operation();
    if (!(result == -1 && errno == EINTR)) return result;
  }
}

/// A move-only owner of a file descriptor; -1 means "none".
class UniqueFd {
 public:
  UniqueFd() = default;
  explicit UniqueFd(int fd) : fd_(fd) {}
  UniqueFd(UniqueFd&& other) noexcept : fd_(other.release()) {}
  UniqueFd& operator=(UniqueFd&& other) noexcept {
    if (this != &other) reset(other.release());
    return *this;
  }
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;
  ~UniqueFd() { reset(); }

  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  explicit operator bool() const { return valid(); }

  /// Gives up ownership without closing; returns the descriptor.
  int release() { return std::exchange(fd_, -1); }
  /// Closes the owned descriptor (if any) and takes `fd` instead.
  void reset(int fd = -1);

 private:
  int fd_ = -1;
};

}  // namespace deskd
