#pragma once
// start_sandboxed without copying deskd: the launch, and the wait for the child's set-up,
// run on one of deskd's launch threads, so that the child can share deskd's memory
// (memory_sharing_clone.h) while the event loop goes on.
//
// A fork copies deskd's page tables on every start of a desk's terminal, in time that grows
// with deskd's memory (bench/README.md, cold start: 3.4 ms more at 64 MB), and leaves every
// page of deskd copy-on-write afterwards. A child that shares deskd's memory copies nothing,
// but the thread that made it must wait, relying on no errno, until the child has executed
// deskd-init: a launch thread does that waiting, not the event loop.
//
// The launch threads live as long as deskd: the kernel sends a child its parent-death
// signal when the thread that made it ends, not the process (prctl(2), PR_SET_PDEATHSIG),
// so a thread that ended after its launch would kill the sandbox it had just made. Internal
// to the launcher.

#include <sys/types.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "base/result.h"

namespace deskd::sandbox {

class StartingSandbox;        // launcher.h
struct StandardStreams;       // launcher.h
struct SandboxSpec;           // sandbox_spec.h

/// Told the child's pid and pidfd right after the clone, on the launching thread.
using CloneWatch = std::function<void(pid_t pid, int pidfd)>;

/// launcher.cpp: the launch that shares deskd's memory, through the child's set-up; `watch`
/// is told of the child as soon as it exists.
Result<StartingSandbox> start_sharing_memory(const SandboxSpec& spec, const std::vector<std::string>& command,
                                             const StandardStreams& streams, const CloneWatch& watch);

/// One launch handed to a launch thread.
class BackgroundStart {
 public:
  /// Queues the launch of `command` in `spec` (copied; its start observer is left to the
  /// caller), with copies of `streams`' descriptors, so that the caller may close its own.
  static Result<std::unique_ptr<BackgroundStart>> begin(const SandboxSpec& spec,
                                                        const std::vector<std::string>& command,
                                                        const StandardStreams& streams);
  /// Unfinished: the child, if made, is killed, waited for and reaped. A launch that has
  /// not made its child yet is not waited for: its launch thread kills the child as soon as
  /// it is made and reaps it, so a launch stuck before its clone holds no caller.
  ~BackgroundStart();
  BackgroundStart(const BackgroundStart&) = delete;
  BackgroundStart& operator=(const BackgroundStart&) = delete;

  /// Readable (end of file) once the launch thread is done: the set-up is over or failed.
  int done_fd() const;

  /// The child's host pid, once made (waits for the clone); -1 if the launch failed first.
  pid_t pid() const;

  /// Waits for the launch thread; the sandbox with its set-up over, or the launch's error.
  Result<StartingSandbox> take();

  struct Job;  // background_start.cpp

 private:
  explicit BackgroundStart(std::shared_ptr<Job> job);
  std::shared_ptr<Job> job_;
};

}  // namespace deskd::sandbox
