#pragma once
// How the desk's seccomp listener reaches deskd: a SOCK_SEQPACKET pair made before the clone.
// The child installs the reporting filter with SECCOMP_FILTER_FLAG_NEW_LISTENER as its last
// step, sends the listener over its end (SCM_RIGHTS) and closes both, so that no process of
// the desk ever holds the listener (one that did could answer its own refused calls). Once
// the child has executed deskd-init, the parent takes the listener from its end and gives
// it to the desk's RefusalReporter.

#include <memory>

#include "base/result.h"
#include "base/unique_fd.h"
#include "sandbox/refusal_report.h"

namespace deskd::sandbox {

/// The parent's half of one launch's handover: its end of the pair, and whom the listener
/// goes to. Empty when the desk reports no refusals or the kernel cannot.
struct ListenerHandover {
  UniqueFd channel;
  std::shared_ptr<RefusalReporter> reporter;

  /// Takes the listener the child sent, if any, and gives it to the reporter. Called once
  /// the child has executed; without a listener (the kernel refused the flag) it does nothing.
  void complete();
};

/// The pair for one launch: the parent's half, and the child's end in `child_end`.
/// Nothing (and no error) when `reporter` is null or the kernel has no user notification.
Result<ListenerHandover> make_listener_handover(std::shared_ptr<RefusalReporter> reporter, UniqueFd& child_end);

/// In the child, between clone and exec: sends `listener` over `channel`. Async-signal-safe.
/// Returns 0, or -1 with errno set.
int send_listener(int channel, int listener);

}  // namespace deskd::sandbox
