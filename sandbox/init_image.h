#pragma once
// deskd-init's executable image (sandbox/init/), built into deskd and executed from a sealed,
// read-only memfd: the sandbox's pid 1 is a fresh program, never a copy of deskd's memory,
// and no file on the host or in the sandbox can be swapped for it.

#include "base/result.h"

namespace deskd::sandbox {

/// A read-only descriptor of the sealed memfd holding deskd-init, made on first use and
/// kept for the life of the process (close-on-exec). The error names what failed and, when
/// the host forbids executing memfds (vm.memfd_noexec = 2), says so.
Result<int> init_image_descriptor();

}  // namespace deskd::sandbox
