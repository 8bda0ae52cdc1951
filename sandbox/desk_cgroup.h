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
  /// The desk's cgroup while any sandbox of the desk holds it; else a new one with
  /// `limits` (the desk's cgroup goes when its last sandbox is gone). nullptr when the host
  /// gives deskd no cgroup; an error when it does but the cgroup cannot be made.
  Result<std::shared_ptr<DeskCgroup>> acquire(const ResourceLimits& limits);

 private:
  std::mutex mutex_;
  std::weak_ptr<DeskCgroup> current_;
};

}  // namespace deskd::sandbox
