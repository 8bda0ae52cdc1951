#pragma once
// SandboxedProcess: the handle of one running sandbox — its init's pid and pidfd, and the
// parent's ends of any pipes. Closing or destroying it kills every process of the sandbox
// (killing the pid namespace's init makes the kernel kill the rest) and reaps it.

#include <sys/types.h>

#include <chrono>
#include <optional>

#include "base/result.h"
#include "base/unique_fd.h"
#include "sandbox/cgroup_limits.h"

namespace deskd::sandbox {

class SandboxedProcess {
 public:
  SandboxedProcess(pid_t pid, UniqueFd pidfd, std::optional<SandboxCgroup> cgroup = std::nullopt)
      : pid_(pid), pidfd_(std::move(pidfd)), cgroup_(std::move(cgroup)) {}
  SandboxedProcess(SandboxedProcess&& other) noexcept;
  SandboxedProcess& operator=(SandboxedProcess&& other) noexcept;
  SandboxedProcess(const SandboxedProcess&) = delete;
  SandboxedProcess& operator=(const SandboxedProcess&) = delete;
  /// Kills and reaps the sandbox if it is still running.
  ~SandboxedProcess();

  /// The host pid of the sandbox's init.
  pid_t pid() const { return pid_; }
  /// A pidfd for the init (readable when it exits), or an invalid fd on old kernels.
  int pidfd() const { return pidfd_.get(); }

  /// Waits for the sandbox to end; returns the command's exit status (128+N if killed by
  /// signal N). Once it has returned, later calls return the same status.
  Result<int> wait();

  /// Like wait(), but gives up after `timeout`: nullopt while still running.
  Result<std::optional<int>> wait_for(std::chrono::milliseconds timeout);

  /// Sends `signal_number` to the init, which forwards SIGTERM, SIGINT, SIGHUP and SIGQUIT
  /// to the command. SIGKILL ends the whole sandbox at once.
  Result<void> signal(int signal_number);

  /// Kills every process of the sandbox and reaps the init. Idempotent.
  void close();

  /// How often the sandbox ran into its limits so far, also after it ended (the counters are
  /// kept at the reaping). From the cgroup's counters; without a cgroup (the rlimit
  /// fallback) the process limit counts as met when the sandbox holds `process_limit`
  /// processes, counted from its init down; memory cannot be told then.
  LimitHits limit_hits(std::uint64_t process_limit) const;

  /// How many processes run below the init now (the command and whatever it left running,
  /// such as background jobs, each thread counted under a cgroup); 0 once it has ended.
  /// From the sandbox's cgroup, else a walk of /proc: a moment's look.
  std::uint64_t processes_below_init() const;

 private:
  Result<std::optional<int>> reap(bool block);
  pid_t pid_ = -1;
  UniqueFd pidfd_;
  std::optional<SandboxCgroup> cgroup_;  // destroyed (killed, removed) once the init is reaped
  std::optional<int> exit_status_;
  LimitHits final_hits_{};
};

}  // namespace deskd::sandbox
