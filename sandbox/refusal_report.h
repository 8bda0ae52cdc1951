#pragma once
// One refusal, as every enforcer of a desk tells it (seccomp, landlock, the path policy, the
// egress proxy, the API gate, the limits), and the RefusalReporter they tell it to. The
// reporter is per desk and reached through the desk's SandboxSpec (shared by every copy of
// it), so that the sandbox's side (the launcher hands it the desk's seccomp listener), the
// file tools, the bash session and the egress proxy all reach the same one without linking
// what records it (runner/desk/refusal_recorder.h).

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/unique_fd.h"

namespace deskd::sandbox {

/// Who refused.
enum class Enforcer { seccomp, landlock, path_policy, egress, api_gate, limit };

/// "seccomp", "landlock", "path_policy", "egress", "api_gate", "limit".
std::string_view enforcer_name(Enforcer enforcer);

/// The process that was refused, as far as deskd could tell (it may be gone already).
struct RefusedProcess {
  pid_t pid_in_desk = 0;  ///< its pid in the desk's pid namespace; 0 when unknown
  std::string comm;       ///< /proc/PID/comm, desk-chosen text
  std::string exe;        ///< /proc/PID/exe's target, desk-chosen text
};

/// One refusal. `what` is what repeats are folded by, so it holds no per-call detail (no
/// pointer, no counter): that goes into `details`.
struct Refusal {
  Enforcer enforcer = Enforcer::seccomp;
  std::string what;     ///< "mount(2)", "write /etc/passwd", "example.com:443", "memory.max 268435456"
  std::string details;  ///< more of the call: the syscall's arguments as numbers, ...; may be empty
  std::string rule;     ///< why, as a rule: "desks may not mount file systems"
  std::optional<RefusedProcess> process;
  /// A probe programs make on purpose and live without (io_uring_setup, glibc's nscd and
  /// syslog sockets): folded over a much longer window, so it never floods.
  bool probe = false;
  /// Named at the end of the tool result. Off for probes nobody asked for (bash's own start
  /// looks up nscd), which would otherwise greet every first command.
  bool shown_to_model = true;
};

/// Where a desk's enforcers tell their refusals. Implementations are thread-safe: the egress
/// proxy's threads, the event loop's file tools and the seccomp listener all call it.
class RefusalReporter {
 public:
  virtual ~RefusalReporter() = default;
  /// Records `refusal` (folded with its repeats, capped per minute). Never blocks for long.
  virtual void record(Refusal refusal) = 0;
  /// Takes the desk's seccomp listener (SECCOMP_FILTER_FLAG_NEW_LISTENER) of one sandbox and
  /// answers each of its notifications with the errno the desk's filter gives, recording it.
  /// The listener must be answered for as long as the sandbox lives: its processes wait.
  virtual void watch_seccomp_listener(UniqueFd listener) = 0;
  /// Told the host pid of each sandbox's first process, which makes the sandbox's Landlock
  /// domain: Landlock's audit records name a domain by its creator (landlock_audit.h).
  virtual void watch_landlock_domain(pid_t creator_host_pid) = 0;
  /// Takes in what the kernel has already told but deskd has not read yet (Landlock's audit
  /// records come asynchronously, unlike seccomp's notifications): asked as a command ends,
  /// before lines_since().
  virtual void settle() = 0;
  /// A mark to ask lines_since() with: refusals recorded after it. Taken as each command
  /// starts, so it also publishes the folded repeats whose window is over.
  virtual std::uint64_t mark() = 0;
  /// One line per distinct refusal recorded after `mark`, for the end of a tool result:
  /// "deskd refused: mount(2) — desks may not mount file systems". Bounded.
  virtual std::vector<std::string> lines_since(std::uint64_t mark) const = 0;
};

/// The line a model reads for `refusal` (lines_since).
std::string refusal_line(const Refusal& refusal);

/// `text` followed by `lines`, one per line, after a line break.
std::string with_refusal_lines(std::string text, const std::vector<std::string>& lines);

}  // namespace deskd::sandbox
