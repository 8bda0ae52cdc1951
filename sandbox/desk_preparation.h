#pragma once
// Gets a desk folder ready for its sandbox: its writable places exist and, when deskd runs
// as root, belong to the desk's own uid so that the desk can write them.

#include <filesystem>
#include <span>

#include "base/result.h"
#include "sandbox/sandbox_spec.h"

namespace deskd::sandbox {

/// Creates the desk's missing writable places (memory/, notes/, scratch/ and an empty
/// Memory.md). When deskd runs as root, gives each writable place to the spec's uid/gid.
///
/// No path is followed: the desk folder is opened without links (openat2), each place
/// beneath it by name with O_NOFOLLOW, and every change is an fchown on the descriptor of
/// the very file that was examined. A place already owned by the desk is left alone; one
/// that is not (new, or an older deskd's) is handed over with what is inside it that
/// belonged to its previous owner — never a link, a file with other hard links, or
/// anything on another file system — so no swapped-in link or hard link can carry a change
/// out to a host file.
Result<void> prepare_desk_for_sandbox(const SandboxSpec& spec);

/// The one way a desk's sandbox is made, for `deskd serve` and for the commands alike: the
/// confinement of `desk_directory` with `hidden_paths`, then `settings`; the desk's missing
/// writable places are created and, under a root deskd, given to the desk's uid. Refuses
/// what the confinement, the builder or the preparation refuse.
Result<SandboxSpec> build_desk_sandbox_spec(const std::filesystem::path& desk_directory,
                                            std::span<const std::filesystem::path> hidden_paths,
                                            const SandboxSettings& settings);

}  // namespace deskd::sandbox
