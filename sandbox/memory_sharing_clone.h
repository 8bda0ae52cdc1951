#pragma once
// Starting a sandbox's child without copying deskd's memory. A plain clone (a fork) copies
// deskd's page tables and write-protects every page it has; with a thousand desks deskd
// holds a hundred megabytes, so each start cost milliseconds in the copy, and afterwards
// every thread of deskd took a copy-on-write fault (and a TLB shootdown of the other cores)
// at each page it wrote. Startup grew with the square of the desks.
//
// With CLONE_VM the child runs in deskd's own memory, on a stack of its own, until it
// executes deskd-init, and nothing is copied. The price is a rule for the caller: all the
// child reads (its ChildContext and what that points to) must stay alive and unchanged, and
// the calling thread must not rely on errno (the child shares its thread's TLS), until the
// child has executed or died. launcher.cpp keeps the rule by waiting, with every signal
// blocked, for the child's report pipe to close (or carry a failure) before anything the
// child reads goes out of scope; an early return kills and reaps the child first. And it
// shares memory only where no desk can fill the memory cgroup the child joins: a cgroup's
// OOM killer would rank the child by deskd's memory and kill deskd with it (launcher.cpp,
// sharing_memory_is_safe).

#include <sys/types.h>

#include <cstddef>

#include "base/result.h"

namespace deskd::sandbox {

/// Whether this build can share memory with the child: x86-64 (the one architecture whose
/// clone3 trampoline is written here) and no sanitizer, of GCC's or clang's (whose runtime's
/// per-thread state and interceptors the child would use with the launching thread's TLS),
/// on Linux 5.16 or later (before, a crash of the child would kill deskd too). Elsewhere the
/// launcher forks.
bool can_clone_sharing_memory();

/// A stack for the child: mapped on demand, with an unmapped guard page below it. Unmapped
/// when dropped, which must be after the child has executed or died.
class ChildStack {
 public:
  static Result<ChildStack> map(std::size_t bytes = std::size_t{512} << 10);
  ChildStack(ChildStack&& other) noexcept : base_(other.base_), bytes_(other.bytes_) { other.base_ = nullptr; }
  ChildStack& operator=(ChildStack&&) = delete;
  ChildStack(const ChildStack&) = delete;
  ~ChildStack();

  void* base() const { return base_; }
  std::size_t bytes() const { return bytes_; }

 private:
  ChildStack(void* base, std::size_t bytes) : base_(base), bytes_(bytes) {}
  void* base_;
  std::size_t bytes_;
};

/// clone3 with `flags` | CLONE_VM | CLONE_PIDFD | CLONE_CLEAR_SIGHAND (| CLONE_INTO_CGROUP
/// when cgroup_fd >= 0), the child running `child(argument)` on `stack` with every caught
/// signal at its default; `child` must never return. Returns the child's pid in the parent
/// (and its pidfd in *pidfd), or -1 with errno (ENOSYS where clone3 is missing, EINVAL
/// where the kernel lacks CLONE_CLEAR_SIGHAND (5.3, 5.4), ENOTSUP where
/// can_clone_sharing_memory() is false).
pid_t clone_sharing_memory(unsigned long long flags, int* pidfd, int cgroup_fd, const ChildStack& stack,
                           void (*child)(void*), void* argument);

}  // namespace deskd::sandbox
