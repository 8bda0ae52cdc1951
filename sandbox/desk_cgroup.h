#pragma once
// DeskCgroupSlot: how every sandbox of one desk finds the desk's one cgroup. A SandboxSpec
// holds a slot (shared by every copy of the spec), so the desk's bash, its subagents'
// bashes and its file opener all land under one cgroup that carries the desk's memory,
// process and CPU limits for the desk as a whole; each sandbox gets only a child cgroup of
// its own, without limits, for killing it and counting what it ran into.

#include <memory>
#include <mutex>

#include "base/result.h"

namespace deskd::sandbox {

class DeskCgroup;       // cgroup_limits.h
struct ResourceLimits;  // sandbox_spec.h

class DeskCgroupSlot {
 public:
  /// `shared`: the desk's sandboxes come and go (a daemon's desk), each in a cgroup of its
  /// own under the desk's. `one_sandbox`: the process runs one sandbox of this desk and exits
  /// (`deskd sandbox`), so the sandbox's cgroup is the desk's: one folder per hierarchy,
  /// made and removed once (cgroup_instance.h, make_single_use). `alone`: made as a shared
  /// desk's, for one sandbox that nothing else of the desk joins (a running deskd's trial of
  /// a desk), so that its launch may share deskd's memory (launcher.cpp).
  enum class Use { shared, one_sandbox, alone };
  explicit DeskCgroupSlot(Use use = Use::shared) : use_(use) {}
  Use use() const { return use_; }

  /// The desk's cgroup while any sandbox of the desk holds it; else a new one with
  /// `limits` (the desk's cgroup goes when its last sandbox is gone). nullptr when the host
  /// gives deskd no cgroup; an error when it does but the cgroup cannot be made.
  Result<std::shared_ptr<DeskCgroup>> acquire(const ResourceLimits& limits);

 private:
  Use use_;
  std::mutex mutex_;
  std::weak_ptr<DeskCgroup> current_;
};

}  // namespace deskd::sandbox
