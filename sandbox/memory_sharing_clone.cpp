#include "sandbox/memory_sharing_clone.h"

#include <linux/sched.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>

#ifndef CLONE_CLEAR_SIGHAND
#define CLONE_CLEAR_SIGHAND 0x100000000ULL  // Linux 5.5
#endif

// A sanitizer's runtime keeps per-thread state (ASan's fake stacks, TSan's and MSan's
// shadow of the thread) and intercepts the libc calls the child makes: with the child on
// the launching thread's TLS, both would use that state at once. GCC says so with
// __SANITIZE_*__; clang 14, at least, only through __has_feature.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__) || defined(__SANITIZE_HWADDRESS__)
#define DESKD_SANITIZED_BUILD 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || __has_feature(memory_sanitizer) || \
    __has_feature(hwaddress_sanitizer) || __has_feature(dataflow_sanitizer)
#define DESKD_SANITIZED_BUILD 1
#endif
#endif

namespace deskd::sandbox {

namespace {

#if defined(__x86_64__) && !defined(DESKD_SANITIZED_BUILD)
constexpr bool kSharingPossible = true;

// Written by hand: glibc's clone() wrapper has no clone3 (so no CLONE_INTO_CGROUP, whose
// absence costs a cgroup.procs write and an RCU grace period per start), and the generic
// syscall() cannot switch stacks: the child would return into the parent's frames on a
// stack that holds none. In the child the kernel has set rsp to the top of the new stack;
// `child` and `argument` wait in callee-saved registers, which the child inherits.
[[gnu::noinline]] long clone3_on_stack(clone_args* arguments, void (*child)(void*), void* argument) {
  long result = SYS_clone3;
  register void (*child_register)(void*) asm("r12") = child;
  register void* argument_register asm("r13") = argument;
  asm volatile(
      "syscall\n\t"
      "test %%rax, %%rax\n\t"
      "jnz 1f\n\t"
      "xor %%ebp, %%ebp\n\t"  // the child's outermost frame
      "mov %%r13, %%rdi\n\t"
      "call *%%r12\n\t"
      "ud2\n"  // `child` never returns
      "1:\n"
      : "+a"(result)
      : "D"(arguments), "S"(sizeof(clone_args)), "r"(child_register), "r"(argument_register)
      : "rcx", "r11", "memory", "cc");
  return result;
}
#else
constexpr bool kSharingPossible = false;
#endif

constexpr std::size_t kGuardBytes = 4096;

// Before Linux 5.16 a core dump killed every process sharing the dumping one's memory
// (coredump's zap_threads walked all of them): a crash of the child before its exec would
// have taken deskd down with it. 5.16 limited it to the thread group.
bool kernel_dumps_only_its_thread_group() {
  utsname name{};
  if (::uname(&name) != 0) return false;
  int major = 0;
  int minor = 0;
  if (std::sscanf(name.release, "%d.%d", &major, &minor) != 2) return false;
  return major > 5 || (major == 5 && minor >= 16);
}

}  // namespace

bool can_clone_sharing_memory() {
  static const bool possible = kSharingPossible && kernel_dumps_only_its_thread_group();
  return possible;
}

Result<ChildStack> ChildStack::map(std::size_t bytes) {
  void* base = ::mmap(nullptr, bytes + kGuardBytes, PROT_READ | PROT_WRITE,
                      MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK | MAP_NORESERVE, -1, 0);
  if (base == MAP_FAILED) return Error::from_errno(errno, "Mapping a stack for the sandbox's child failed");
  if (::mprotect(base, kGuardBytes, PROT_NONE) != 0) {
    const int error_number = errno;
    ::munmap(base, bytes + kGuardBytes);
    return Error::from_errno(error_number, "Protecting the guard page of the sandbox child's stack failed");
  }
  return ChildStack(base, bytes + kGuardBytes);
}

ChildStack::~ChildStack() {
  if (base_ != nullptr) ::munmap(base_, bytes_);
}

pid_t clone_sharing_memory(unsigned long long flags, int* pidfd, int cgroup_fd, const ChildStack& stack,
                           void (*child)(void*), void* argument) {
#if defined(__x86_64__) && !defined(DESKD_SANITIZED_BUILD)
  clone_args arguments{};
  // CLONE_CLEAR_SIGHAND: the child gets every caught signal at its default, so no handler of
  // deskd's ever runs in it, on deskd's memory. Its mask (the launching thread's, all
  // blocked) holds what arrives until, just before its exec, it restores the thread's old
  // one: a pending SIGTERM (systemd's, to the whole cgroup) or SIGINT (a terminal's, to the
  // process group the child is in until its setsid) then ran deskd's handler there.
  arguments.flags = flags | CLONE_VM | CLONE_PIDFD | CLONE_CLEAR_SIGHAND | (cgroup_fd >= 0 ? CLONE_INTO_CGROUP : 0);
  if (cgroup_fd >= 0) arguments.cgroup = static_cast<std::uint64_t>(cgroup_fd);
  arguments.pidfd = reinterpret_cast<std::uint64_t>(pidfd);
  arguments.exit_signal = SIGCHLD;
  // The kernel starts the child at stack + stack_size; the mapping's size is a multiple of
  // the page size, so the top is 16-byte aligned as the ABI wants before the call.
  arguments.stack = reinterpret_cast<std::uint64_t>(stack.base());
  arguments.stack_size = stack.bytes();
  const long pid = clone3_on_stack(&arguments, child, argument);
  if (pid < 0) {
    errno = static_cast<int>(-pid);
    return -1;
  }
  return static_cast<pid_t>(pid);
#else
  (void)flags, (void)pidfd, (void)cgroup_fd, (void)stack, (void)child, (void)argument;
  errno = ENOTSUP;
  return -1;
#endif
}

}  // namespace deskd::sandbox
