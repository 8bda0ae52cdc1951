#pragma once
// How the child reports a failed setup step to the parent, between clone and exec: a
// fixed-size record written to a close-on-exec pipe. Everything here is async-signal-safe.

#include <unistd.h>

#include <cstddef>

#include "sandbox/init/init_protocol.h"

namespace deskd::sandbox {

/// What the child tells the parent when a step fails. A pipe that closes without a
/// record means the command was executed.
struct ChildFailure {
  int error_number = 0;
  int exit_status = 125;  ///< What the launch returns: 125 setup, 126/127 exec failures
  char step[160] = {};    ///< What was being done, e.g. "mount a tmpfs on /tmp"
  char path[512] = {};    ///< The path involved, if any
};

// deskd-init writes the same record, as the C struct it shares with the launcher.
static_assert(sizeof(ChildFailure) == sizeof(deskd_child_failure));
static_assert(offsetof(ChildFailure, step) == offsetof(deskd_child_failure, step));
static_assert(offsetof(ChildFailure, path) == offsetof(deskd_child_failure, path));

/// Copies `text` into `destination` (at most size-1 bytes, always terminated).
inline void copy_text(char* destination, std::size_t size, const char* text) {
  std::size_t index = 0;
  if (text != nullptr) {
    for (; index + 1 < size && text[index] != '\0'; ++index) destination[index] = text[index];
  }
  destination[index] = '\0';
}

/// Writes the failure record to `fd` and ends the calling process with `exit_status`.
[[noreturn]] inline void fail_child(int fd, int error_number, const char* step, const char* path,
                                    int exit_status = 125) {
  ChildFailure failure;
  failure.error_number = error_number;
  failure.exit_status = exit_status;
  copy_text(failure.step, sizeof failure.step, step);
  copy_text(failure.path, sizeof failure.path, path);
  // A short write cannot happen for a record smaller than PIPE_BUF; if the parent is gone
  // there is nobody to tell.
  [[maybe_unused]] const ssize_t written = ::write(fd, &failure, sizeof failure);
  ::_exit(exit_status);
}

}  // namespace deskd::sandbox
