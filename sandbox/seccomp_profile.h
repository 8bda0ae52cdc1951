#pragma once
// The seccomp profile every sandboxed process runs under, compiled with libseccomp in the
// parent, before the clone, into a BPF program the child installs with one system call
// (nothing in the child allocates).
//
// Shape: an allowlist wide enough for general-purpose programs (bash, coreutils, python3,
// git, curl, compilers), starting from Docker's default profile minus its dangerous part.
//   - allowed syscalls: allowed;
//   - explicitly denied syscalls (mount API, namespaces, ptrace, bpf, keyctl, io_uring, ...):
//     fail with EPERM;
//   - clone with namespace flags: EPERM; clone3: ENOSYS, so libc falls back to clone;
//   - ioctl TIOCSTI / TIOCLINUX (matched on the low 32 bits of the request): EPERM;
//   - personality other than the harmless values: EPERM;
//   - socket(AF_UNIX) and socket(AF_VSOCK): EPERM;
//   - socketpair of a kind other than SOCK_STREAM or SOCK_SEQPACKET (a datagram pair could
//     sendto a host socket in view): EPERM;
//   - every other (unknown) syscall: ENOSYS;
//   - a non-native architecture (int 0x80, i386) or the x32 ABI: the process is killed.

#include <linux/filter.h>

#include <span>
#include <string>
#include <vector>

#include "base/result.h"

namespace deskd::sandbox {

/// A compiled seccomp BPF program. Move-only in spirit: program() points into this object.
class SeccompProgram {
 public:
  /// Compiles deskd's profile for the native architecture. Fails when libseccomp fails.
  /// Takes a few milliseconds; launches use precompiled() instead.
  static Result<SeccompProgram> build();

  /// The same program, compiled by build() when deskd was built (a generator writes it
  /// into the binary), so that a launch pays nothing for it. Tests check that the two agree.
  static SeccompProgram precompiled();

  SeccompProgram(const SeccompProgram&) = delete;
  SeccompProgram& operator=(const SeccompProgram&) = delete;
  SeccompProgram(SeccompProgram&& other) noexcept;
  SeccompProgram& operator=(SeccompProgram&& other) noexcept;

  /// The program, for seccomp(SECCOMP_SET_MODE_FILTER, 0, program()) in the child; the
  /// caller must already have set no_new_privs. Valid while this object lives.
  const sock_fprog* program() const { return &program_; }

  /// The instructions, for comparison and for writing them out.
  std::span<const sock_filter> instructions() const { return instructions_; }

  /// Installs the program in the calling thread. Async-signal-safe (one raw syscall), for
  /// the child between clone and exec. Returns 0, or -1 with errno set.
  int install() const;

  /// The same program, but every call it refuses with EPERM goes to a listener instead
  /// (SECCOMP_RET_USER_NOTIF), for deskd to answer with that EPERM and record
  /// (seccomp_notification.h). clone3's ENOSYS and unknown calls' ENOSYS stay as they are:
  /// they are answers, not refusals, and clone3 is on every fork's path.
  SeccompProgram with_refusals_notified() const;

  /// Installs the program with SECCOMP_FILTER_FLAG_NEW_LISTENER. Async-signal-safe. Returns
  /// the listener, or -1 with errno set (EINVAL: the kernel has no user notification).
  int install_with_listener() const;

 private:
  SeccompProgram() = default;
  std::vector<sock_filter> instructions_;
  sock_fprog program_{};
};

/// The profile as readable text for `deskd sandbox --print-seccomp`: the default action,
/// the allowed syscalls, the denied ones and why, the argument filters, and what kills.
std::string describe_seccomp_profile();

}  // namespace deskd::sandbox
