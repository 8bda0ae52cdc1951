#include "sandbox/memory_pinning_filter.h"

#include <linux/audit.h>
#include <linux/seccomp.h>
#include <sys/syscall.h>

#include <cerrno>
#include <cstddef>

namespace deskd::sandbox {
namespace {

#if defined(__x86_64__)
constexpr unsigned kNativeArchitecture = AUDIT_ARCH_X86_64;
#elif defined(__aarch64__)
constexpr unsigned kNativeArchitecture = AUDIT_ARCH_AARCH64;
#else
#error "memory_pinning_filter: add this architecture's AUDIT_ARCH"
#endif

#ifndef __NR_memfd_secret
#define __NR_memfd_secret 447
#endif

constexpr unsigned kArchitecture = offsetof(seccomp_data, arch);
constexpr unsigned kNumber = offsetof(seccomp_data, nr);

// Another architecture's calls are let through here: the profile kills them anyway, and
// their numbers mean other calls.
const sock_filter kInstructions[] = {
    BPF_STMT(BPF_LD | BPF_W | BPF_ABS, kArchitecture),
    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, kNativeArchitecture, 1, 0),
    BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    BPF_STMT(BPF_LD | BPF_W | BPF_ABS, kNumber),
    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_memfd_create, 3, 0),
    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_memfd_secret, 2, 0),
    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_shmget, 1, 0),
    BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (EPERM & SECCOMP_RET_DATA)),
};

const sock_fprog kProgram{static_cast<unsigned short>(sizeof kInstructions / sizeof kInstructions[0]),
                          const_cast<sock_filter*>(kInstructions)};

}  // namespace

const sock_fprog* memory_pinning_filter() { return &kProgram; }

const char* memory_pinning_calls() { return "memfd_create, memfd_secret, shmget"; }

}  // namespace deskd::sandbox
