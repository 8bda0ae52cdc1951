#pragma once
// Without a cgroup, a desk's memory is limited per process by RLIMIT_AS, which counts only
// what is mapped. Pages held by a file descriptor and nothing else — a memfd, a
// memfd_secret, a SysV shared memory segment left detached — escape it (a memfd of 1 GiB
// was held under --memory 256M). This small seccomp filter, stacked on the profile only
// where no cgroup counts those pages, refuses the calls that make them with EPERM.
// (/tmp and /dev/shm are bounded by their tmpfs sizes instead; see launcher.cpp.)

#include <linux/filter.h>

namespace deskd::sandbox {

/// The filter, built into the binary; install with seccomp(SECCOMP_SET_MODE_FILTER) after
/// no_new_privs. Lets every other call through (the profile decides those).
const sock_fprog* memory_pinning_filter();

/// The calls it refuses, for `deskd doctor` and the README: "memfd_create, memfd_secret, shmget".
const char* memory_pinning_calls();

}  // namespace deskd::sandbox
