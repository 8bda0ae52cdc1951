#pragma once
// The seccomp listener's side in deskd: what a notification of a refused system call holds,
// how it is received and answered, and how it is named for a person and a model.
//
// With reporting, the desk's filter (SeccompProgram::with_refusals_notified) returns
// SECCOMP_RET_USER_NOTIF where it returned EPERM; the listener goes to deskd
// (RefusalReporter::watch_seccomp_listener), which answers each notification with that same
// EPERM — never by letting the call go on — and records it. Nothing here allocates on the
// answer's path but the naming.

#include <sys/types.h>

#include <array>
#include <cstdint>
#include <optional>
#include <string>

#include "base/result.h"
#include "sandbox/refusal_report.h"

namespace deskd::sandbox {

/// One system call the desk's filter refused, waiting for deskd's answer.
struct SeccompNotice {
  std::uint64_t id = 0;  ///< the kernel's cookie for the answer
  pid_t pid = 0;         ///< the caller, in deskd's pid namespace
  int syscall_number = -1;
  std::uint32_t architecture = 0;
  std::array<std::uint64_t, 6> arguments{};
};

/// Whether this kernel lets a filter hand its refusals to a listener (Linux 5.0+, and
/// SECCOMP_RET_USER_NOTIF available): what the launcher and `deskd doctor` ask.
bool seccomp_user_notification_available();

/// Whether deskd itself runs under a seccomp filter (a container runtime's: "Seccomp: 2" in
/// /proc/self/status). That filter's ERRNO outranks the desk's USER_NOTIF, so for the calls
/// both refuse the desk would get the runtime's errno (podman's ENOSYS) instead of deskd's
/// EPERM: the launcher then keeps the plain filter, and nothing is reported.
bool deskd_under_seccomp_filter();

/// The next notification of `listener`; nullopt when none is waiting any more (its caller
/// was killed meanwhile: ENOENT) or the read was interrupted. An error otherwise.
Result<std::optional<SeccompNotice>> receive_seccomp_notice(int listener);

/// Answers `notice` with -1 and `error_number` for its caller. Never lets the call go on.
/// ENOENT (the caller is gone) is not an error.
Result<void> refuse_seccomp_notice(int listener, const SeccompNotice& notice, int error_number);

/// Asks the kernel (Linux 6.6+) to wake a refused caller on deskd's own CPU when it is
/// answered, which halves the round trip; older kernels refuse it, which changes nothing.
void prefer_synchronous_wake_up(int listener);

/// Whether the kernel still holds `notice` (its caller is alive and waiting): checked after
/// reading /proc/PID, so that a reused pid is never named.
bool seccomp_notice_still_waiting(int listener, const SeccompNotice& notice);

/// The errno the desk's filter gives the call `notice` names (EPERM for every reported one).
int refused_syscall_error(const SeccompNotice& notice);

/// The refusal `notice` stands for, without its process: the syscall by name ("mount(2)"),
/// its arguments as numbers (desk pointers are never followed) and the rule it broke.
Refusal describe_seccomp_notice(const SeccompNotice& notice);

/// Its caller as /proc tells it (pid in the desk, comm, exe), bounded and best effort: a
/// field deskd cannot read stays empty.
RefusedProcess describe_refused_process(pid_t host_pid);

}  // namespace deskd::sandbox
