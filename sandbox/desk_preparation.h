#pragma once
// Gets a desk folder ready for its sandbox: its writable places exist and, when deskd runs
// as root, belong to the sandbox's unprivileged identity so that the desk can write them.

#include "base/result.h"
#include "sandbox/sandbox_spec.h"

namespace deskd::sandbox {

/// Creates the desk's missing writable places (memory/, notes/, scratch/ and an empty
/// Memory.md). When deskd runs as root, hands each writable place and everything beneath
/// it to the spec's uid/gid (links themselves are re-owned, never followed; other file
/// systems mounted beneath are not entered). Nothing outside the writable places changes.
Result<void> prepare_desk_for_sandbox(const SandboxSpec& spec);

}  // namespace deskd::sandbox
