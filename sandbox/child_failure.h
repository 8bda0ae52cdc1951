#pragma once
// How the child's set-up fails, between clone and exec. Every step returns a StepResult: what
// was being done, on which path, and the errno (bubblewrap's bind_mount_result and failing
// path, in one value). The child's only caller of the steps turns a failed one into a
// fixed-size record on a close-on-exec pipe, which the parent reads into the launch's error.
// Everything here is async-signal-safe and allocates nothing.

#include <unistd.h>

#include <cerrno>
#include <cstddef>

#include "sandbox/init/init_protocol.h"

namespace deskd::sandbox {

/// The outcome of one step of the child's set-up. `step` is nullptr when it succeeded;
/// otherwise it and `path` point at static text or at data the parent prepared before the
/// clone (a mount step's description and target), which outlive the child's set-up.
struct [[nodiscard]] StepResult {
  const char* step = nullptr;  ///< What was being done, e.g. "mask the hidden path"
  const char* path = "";       ///< The path involved, "" if none
  int error_number = 0;
  bool ok() const { return step == nullptr; }
};

/// A step that went well.
inline StepResult step_succeeded() { return {}; }

/// `step` failed on `path` with the errno the failed call left; call it right after that call.
inline StepResult step_failed(const char* step, const char* path = "") { return {step, path, errno}; }

/// The parent is gone (or failed before waking the child): there is nobody to tell, and the
/// child ends without a record.
inline constexpr char kParentGone[] = "outlive the parent";
inline StepResult parent_gone() { return {kParentGone, "", 0}; }

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

/// Writes the failed step's record to `fd` (none when the parent is gone) and ends the
/// calling process with 125, the status of a failed set-up.
[[noreturn]] inline void report_and_exit(int fd, const StepResult& failed) {
  if (failed.step != kParentGone) {
    ChildFailure failure;
    failure.error_number = failed.error_number;
    copy_text(failure.step, sizeof failure.step, failed.step);
    copy_text(failure.path, sizeof failure.path, failed.path);
    // A short write cannot happen for a record smaller than PIPE_BUF; if the parent is gone
    // there is nobody to tell.
    [[maybe_unused]] const ssize_t written = ::write(fd, &failure, sizeof failure);
  }
  ::_exit(125);
}

}  // namespace deskd::sandbox
