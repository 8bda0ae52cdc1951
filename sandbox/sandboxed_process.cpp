#include "sandbox/sandboxed_process.h"

#include <poll.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <utility>

namespace deskd::sandbox {

SandboxedProcess::SandboxedProcess(SandboxedProcess&& other) noexcept
    : pid_(std::exchange(other.pid_, -1)),
      pidfd_(std::move(other.pidfd_)),
      cgroup_(std::move(other.cgroup_)),
      exit_status_(other.exit_status_),
      final_hits_(other.final_hits_) {}

SandboxedProcess& SandboxedProcess::operator=(SandboxedProcess&& other) noexcept {
  if (this != &other) {
    close();
    pid_ = std::exchange(other.pid_, -1);
    pidfd_ = std::move(other.pidfd_);
    cgroup_ = std::move(other.cgroup_);
    exit_status_ = other.exit_status_;
    final_hits_ = other.final_hits_;
  }
  return *this;
}

SandboxedProcess::~SandboxedProcess() { close(); }

Result<std::optional<int>> SandboxedProcess::reap(bool block) {
  if (exit_status_) return exit_status_;
  if (pid_ < 0) return Error::make(ErrorCode::internal, "The sandbox handle is empty.");
  int status = 0;
  const pid_t reaped = retry_on_eintr([&] { return ::waitpid(pid_, &status, block ? 0 : WNOHANG); });
  if (reaped < 0) return Error::from_errno(errno, "Waiting for the sandbox failed");
  if (reaped == 0) return std::optional<int>();
  exit_status_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  pidfd_.reset();
  if (cgroup_) final_hits_ = cgroup_->limit_hits();
  cgroup_.reset();  // the pid namespace is gone; the cgroup kills any straggler and goes
  return exit_status_;
}

Result<int> SandboxedProcess::wait() {
  DESKD_ASSIGN_OR_RETURN(auto status, reap(true));
  return *status;
}

Result<std::optional<int>> SandboxedProcess::wait_for(std::chrono::milliseconds timeout) {
  if (exit_status_ || !pidfd_) return reap(false);  // without a pidfd: a single look
  pollfd descriptor{pidfd_.get(), POLLIN, 0};
  const int ready = retry_on_eintr([&] { return ::poll(&descriptor, 1, static_cast<int>(timeout.count())); });
  if (ready < 0) return Error::from_errno(errno, "Waiting for the sandbox failed");
  return reap(false);
}

Result<void> SandboxedProcess::signal(int signal_number) {
  if (exit_status_ || pid_ < 0) return success();
  // The pidfd cannot name a recycled pid; fall back to kill() only without one.
  const long sent = pidfd_ ? ::syscall(SYS_pidfd_send_signal, pidfd_.get(), signal_number, nullptr, 0)
                           : ::kill(pid_, signal_number);
  if (sent != 0 && errno != ESRCH) return Error::from_errno(errno, "Signalling the sandbox failed");
  return success();
}

void SandboxedProcess::close() {
  if (pid_ < 0 || exit_status_) return;
  (void)signal(SIGKILL);
  if (cgroup_) cgroup_->kill_all();
  (void)reap(true);
}

}  // namespace deskd::sandbox
