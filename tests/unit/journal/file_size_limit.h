#pragma once
// A real "disk full" for tests without root: a file size limit (RLIMIT_FSIZE) on this
// process, so that a write past it fails with EFBIG as a write to a full disk fails.

#include <signal.h>
#include <sys/resource.h>

#include <cstdint>

#include <gtest/gtest.h>

namespace deskd::desk::testing {

// Lets no file of this process grow past `bytes` until destroyed; SIGXFSZ, which would
// end the process, is ignored meanwhile.
class FileSizeLimit {
 public:
  explicit FileSizeLimit(std::uintmax_t bytes) {
    ::getrlimit(RLIMIT_FSIZE, &saved_);
    previous_handler_ = ::signal(SIGXFSZ, SIG_IGN);
    rlimit limit = saved_;
    limit.rlim_cur = bytes;
    EXPECT_EQ(::setrlimit(RLIMIT_FSIZE, &limit), 0);
  }
  ~FileSizeLimit() {
    ::setrlimit(RLIMIT_FSIZE, &saved_);
    ::signal(SIGXFSZ, previous_handler_);
  }
  FileSizeLimit(const FileSizeLimit&) = delete;
  FileSizeLimit& operator=(const FileSizeLimit&) = delete;

 private:
  rlimit saved_{};
  sighandler_t previous_handler_ = SIG_DFL;
};

}  // namespace deskd::desk::testing
