#pragma once
// Launcher: starts one command inside a sandbox described by a SandboxSpec.
//
// Everything the child needs (mount plan, seccomp program, landlock rules, argv, env) is
// prepared here before the clone. The launch fails closed: if any isolation step fails
// in the child, the command never runs and the error names the step and the path.

#include <string>
#include <vector>

#include "base/result.h"
#include "sandbox/listener_handover.h"
#include "sandbox/sandbox_spec.h"
#include "sandbox/sandboxed_process.h"

namespace deskd::sandbox {

/// Descriptors that become the command's standard streams; -1 keeps the launcher's own.
struct StandardStreams {
  int input = -1;
  int output = -1;
  int error = -1;
  /// More descriptors for the command: extra[i] becomes descriptor 3 + i. Every other
  /// descriptor is closed.
  std::vector<int> extra = {};
};

/// Exit statuses a launch failure maps to, as `env` and shells use them.
inline constexpr int kSetupFailedStatus = 125;
inline constexpr int kNotExecutableStatus = 126;
inline constexpr int kNotFoundStatus = 127;

/// Starts `command` (argv; argv[0] is searched in the sandbox's PATH unless it holds a
/// '/') in a new sandbox. Errors: code `not_found` when the command does not exist,
/// `refused` when it cannot be executed, anything else: setup failed.
Result<SandboxedProcess> launch_sandboxed(const SandboxSpec& spec,
                                          const std::vector<std::string>& command,
                                          const StandardStreams& streams = {});

/// A sandbox whose child has been created and woken but may still be setting itself up
/// (mounts, seccomp, landlock, the init, the exec of the command). An event loop waits
/// for report_fd() to become readable instead of blocking for the whole set-up, then
/// calls finish(). Dropping it unfinished kills and reaps the sandbox.
class StartingSandbox {
 public:
  StartingSandbox(SandboxedProcess process, UniqueFd report, ListenerHandover handover = {})
      : process_(std::move(process)), report_(std::move(report)), handover_(std::move(handover)) {}

  /// The host pid of the sandbox's init.
  pid_t pid() const { return process_.pid(); }

  /// Readable (a failure record, or end of file once the command was executed) when the
  /// set-up is over.
  int report_fd() const { return report_.get(); }

  /// Whether report_fd() is readable now (an event loop's wake-up may be spurious).
  bool set_up_over() const;

  /// The running sandbox, or the launch error naming the step that failed. Blocks until
  /// the set-up is over if report_fd() is not yet readable.
  Result<SandboxedProcess> finish() &&;

  /// Tells `observer` at a successful finish() how long the start took since `began`.
  void tell_start_to(SandboxStartObserver observer, std::chrono::steady_clock::time_point began) {
    started_ = std::move(observer);
    began_ = began;
  }

 private:
  SandboxedProcess process_;
  UniqueFd report_;
  ListenerHandover handover_;  // the desk's seccomp listener, taken once the child has executed
  SandboxStartObserver started_;
  std::chrono::steady_clock::time_point began_;
};

/// launch_sandboxed without waiting for the child's set-up: the same checks, the same
/// errors (those of the set-up come from finish()).
Result<StartingSandbox> start_sandboxed(const SandboxSpec& spec, const std::vector<std::string>& command,
                                        const StandardStreams& streams = {});

/// Starts the desk's file opener: deskd-init in "files" mode in a new sandbox built from
/// `spec`, answering requests on `socket_fd` (one end of a SOCK_SEQPACKET socketpair) with
/// the desk's identity, mounts, landlock and seccomp. It ends when the other end closes.
Result<SandboxedProcess> launch_file_opener(const SandboxSpec& spec, int socket_fd);

/// The exit status `deskd sandbox` reports for a failed launch.
int exit_status_for_launch_error(const Error& error);

}  // namespace deskd::sandbox
