#pragma once
// The one check that cannot lie: start a real sandbox, as a desk's would start, and see it
// work. A host (or a container: Podman's default seccomp, a masked /proc) can pass every
// feature probe and still refuse a step of the launch; `deskd doctor` runs this too.

#include "sandbox/host_support.h"

namespace deskd::sandbox {

/// Makes a throwaway desk folder under $TMPDIR (default /tmp), runs `true` in a sandbox of
/// it with the default settings, stats the folder through the desk's file opener, and
/// removes the folder. The check is available when all of it worked; otherwise its detail
/// is the launch's own error, which names the failed step. `allow_supplementary_groups`:
/// as the config says (supplementary_groups.h).
SupportCheck try_sandbox_launch(bool allow_supplementary_groups = false);

}  // namespace deskd::sandbox
