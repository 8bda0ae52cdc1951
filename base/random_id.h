#pragma once
// Random hex for ids and markers (triggers, sessions, proposals, subagents, bash's output
// markers): unique and unguessable by a desk; never fails.

#include <cstddef>
#include <string>

namespace deskd {

/// `bytes` random bytes (at most 32) as 2 × `bytes` lower-case hex digits, from getrandom.
/// Should the kernel have none to give (no getrandom, or its pool not yet seeded), a
/// counter spread with the time and the pid keeps the ids unique, if not secret.
std::string random_hex(std::size_t bytes);

}  // namespace deskd
