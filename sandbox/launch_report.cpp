// The parent's half of a launch's failure report: the child's record (child_failure.h), or
// deskd-init's, read from the report pipe and turned into the launch's error, which names
// the step, the path (as the host sees it) and the errno.
#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "sandbox/child_failure.h"
#include "sandbox/container_fix.h"
#include "sandbox/launcher.h"
#include "sandbox/mount_plan.h"

namespace deskd::sandbox {
namespace {

std::string host_path(const char* path) {
  const std::size_t prefix = std::strlen(kNewRoot);
  if (std::strncmp(path, kNewRoot, prefix) == 0 && path[prefix] == '/') return path + prefix;
  return path;
}

Error launch_error(const ChildFailure& failure) {
  const std::string path = host_path(failure.path);
  if (failure.exit_status == kNotFoundStatus) {
    return Error{ErrorCode::not_found, failure.error_number, path + ": command not found in the sandbox."};
  }
  if (failure.exit_status == kNotExecutableStatus) {
    Error error = Error::from_errno(failure.error_number, path + " cannot be executed in the sandbox");
    error.code = ErrorCode::refused;
    return error;
  }
  std::string what = "The sandbox could not be set up: " + std::string(failure.step);
  if (!path.empty()) what += " (" + path + ")";
  Error error = Error::from_errno(failure.error_number, what + " failed");
  error.what += container_fix_for(failure.step);
  return error;
}

}  // namespace

int exit_status_for_launch_error(const Error& error) {
  if (error.code == ErrorCode::not_found) return kNotFoundStatus;
  if (error.code == ErrorCode::refused) return kNotExecutableStatus;
  return kSetupFailedStatus;
}

bool StartingSandbox::set_up_over() const {
  if (!report_) return true;
  pollfd report{report_.get(), POLLIN, 0};
  return retry_on_eintr([&] { return ::poll(&report, 1, 0); }) != 0;
}

Result<SandboxedProcess> StartingSandbox::finish() && {
  if (!report_) return std::move(process_);  // set up already (a child that shared deskd's memory)
  // The pipe closes without a record once the command has been executed. It may have been
  // made non-blocking by an event loop that waited on it (O_NONBLOCK belongs to the open
  // pipe, which a dup shares): a read that would block waits here, and only end of file
  // means success, never an error.
  ChildFailure failure;
  std::size_t received = 0;
  while (received < sizeof failure) {
    const ssize_t count = retry_on_eintr(
        [&] { return ::read(report_.get(), reinterpret_cast<char*>(&failure) + received, sizeof failure - received); });
    if (count == 0) break;
    if (count < 0 && errno == EAGAIN) {
      pollfd report{report_.get(), POLLIN, 0};
      (void)retry_on_eintr([&] { return ::poll(&report, 1, -1); });
      continue;
    }
    if (count < 0) {
      const int error_number = errno;
      process_.close();
      return Error::from_errno(error_number, "The sandbox could not be set up: reading its child's report failed");
    }
    received += static_cast<std::size_t>(count);
  }
  report_.reset();
  if (received == 0) {
    handover_.complete();
    if (started_) started_(std::chrono::steady_clock::now() - began_);
    return std::move(process_);
  }
  process_.close();
  if (received < sizeof failure) {
    return Error::make(ErrorCode::internal, "The sandbox could not be set up: its child sent a truncated report.");
  }
  return launch_error(failure);
}

}  // namespace deskd::sandbox
