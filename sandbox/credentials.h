#pragma once
// The sandbox's identity: user-namespace maps written by the parent, and in the child the
// switch to the sandbox's uid/gid with every capability given up for good.

#include <sys/types.h>

#include "base/result.h"
#include "sandbox/child_failure.h"

namespace deskd::sandbox {

/// The ids inside and outside the sandbox's user namespace.
struct IdentityPlan {
  uid_t uid = 65534;     ///< The uid the sandbox runs as (the same number inside and out).
  gid_t gid = 65534;
  bool may_set_groups = false;  ///< Root daemon: the child can and must drop supplementary groups.
};

/// The identity for a daemon running as `daemon_uid`: a root daemon's sandbox runs as the
/// configured unprivileged ids; an ordinary user's sandbox runs as that user.
IdentityPlan plan_identity(uid_t daemon_uid, gid_t daemon_gid, uid_t root_daemon_uid,
                           gid_t root_daemon_gid);

/// Parent, after the clone: writes setgroups, uid_map and gid_map of `child`.
Result<void> write_identity_maps(pid_t child, const IdentityPlan& plan);

/// Child, first thing after the maps are written: takes on the plan's ids while keeping
/// the capabilities it holds in its own user namespace (needed to build the mounts), so
/// files it creates are owned by a mapped id and host paths are opened with the sandbox's
/// own permissions. Async-signal-safe; a failure names the call that failed.
StepResult become_sandbox_identity(const IdentityPlan& plan);

/// Child: locks the securebits, empties the bounding and ambient sets, switches to the
/// plan's ids, empties every capability set and sets no_new_privs. Async-signal-safe; a
/// failure names the call that failed.
StepResult drop_privileges(const IdentityPlan& plan, int last_capability);

/// The highest capability number this kernel knows (from libcap; read in the parent).
int last_capability();

}  // namespace deskd::sandbox
