// The members of SeccompProgram a launch uses, in a file of their own: an object file of a
// static library is linked only when something uses it, so a program that only launches
// sandboxes (the lean deskd) takes these and not seccomp_profile.cpp, and never loads
// libseccomp (bench/README.md, cold start).

#include <linux/seccomp.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <utility>

#include "sandbox/seccomp_profile.h"

namespace deskd::sandbox {

SeccompProgram::SeccompProgram(SeccompProgram&& other) noexcept
    : instructions_(std::move(other.instructions_)),
      program_{static_cast<unsigned short>(instructions_.size()), instructions_.data()} {
  other.program_ = {};
}

SeccompProgram& SeccompProgram::operator=(SeccompProgram&& other) noexcept {
  if (this != &other) {
    instructions_ = std::move(other.instructions_);
    program_ = {static_cast<unsigned short>(instructions_.size()), instructions_.data()};
    other.program_ = {};
  }
  return *this;
}

int SeccompProgram::install() const {
  // The raw system call: glibc has no seccomp() wrapper, and libseccomp's seccomp_load
  // allocates, which the child between clone and exec must not.
  return static_cast<int>(::syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &program_));
}

SeccompProgram SeccompProgram::with_refusals_notified() const {
  // libseccomp is not asked (it would need to probe the kernel for SCMP_ACT_NOTIFY at
  // build time); the exported program's EPERM returns are rewritten in place. The profile
  // returns EPERM for refusals only, so every one of them is a refusal to report.
  constexpr std::uint32_t kRefusedWithEperm = SECCOMP_RET_ERRNO | EPERM;
  SeccompProgram notified;
  notified.instructions_ = instructions_;
  for (sock_filter& instruction : notified.instructions_) {
    if (instruction.code == (BPF_RET | BPF_K) && instruction.k == kRefusedWithEperm) {
      instruction.k = SECCOMP_RET_USER_NOTIF;
    }
  }
  notified.program_ = {static_cast<unsigned short>(notified.instructions_.size()), notified.instructions_.data()};
  return notified;
}

int SeccompProgram::install_with_listener() const {
  return static_cast<int>(::syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER, &program_));
}

}  // namespace deskd::sandbox
