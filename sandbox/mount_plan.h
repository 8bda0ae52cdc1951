#pragma once
// The mount plan: the filesystem a sandbox sees, computed in the parent as a list of
// steps with every path already spelled out, then carried out by the child between clone
// and exec with raw system calls only.
//
// The child first moves onto a private tmpfs ("base") with the host at /oldroot, builds
// the new root at /newroot, then pivots into it and detaches everything else:
//   minimal view: a tmpfs root with the system folders and the read-only paths bound
//   read-only (full view: the whole host read-only, runtime folders covered) -> /proc,
//   /sys and their kernel masks (kernel_masks.h), /dev, /tmp, /dev/shm -> (full view:
//   homes covered, the read-only paths inside them bound back) -> the desk folder bound
//   read-only at its own path -> its
//   writable places bound read-write -> (network "allowlist": the desk's /etc/hosts bound
//   read-only over the view's) -> hidden paths masked -> (a desk behind the API gate: its
//   trust bundle bound read-only over the view's system bundle, sandbox/trust_bundle.h) ->
//   the root (full view: the homes' covers) made read-only -> pivot_root.

#include <string>
#include <string_view>
#include <vector>

#include "base/unique_fd.h"
#include "sandbox/child_failure.h"
#include "sandbox/sandbox_spec.h"

namespace deskd::sandbox {

/// One thing the child does to its mount namespace.
struct MountStep {
  enum class Operation {
    make_mounts_private,   ///< mount --make-rprivate /
    mount_tmpfs,           ///< target, data (options), flags
    make_directory,        ///< target; EEXIST is fine
    create_file,           ///< target, mode; EEXIST is fine
    create_symlink,        ///< source (link text) -> target
    write_file,            ///< target (a new file in the base tmpfs), data, mode
    pivot_onto_base,       ///< pivot_root onto the base tmpfs, host at /oldroot
    bind,                  ///< source -> target; recursive flag
    set_attributes,        ///< target: mount_setattr set/clear, recursive flag
    mask,                  ///< target: tmpfs if a folder, the empty file if not, else skip
    make_read_only_if_present,  ///< target bound onto itself, recursively read-only; skipped if missing
    mount_proc,            ///< target
    mount_sysfs,           ///< target, read-only; an empty read-only tmpfs where sysfs is refused (EPERM)
    mount_devpts,          ///< target
    pivot_into_new_root,   ///< pivot_root into /newroot, detach the rest
    change_directory,      ///< target
  };
  Operation operation = Operation::make_directory;
  std::string source{};
  std::string target{};
  std::string data{};
  unsigned long flags = 0;
  unsigned long long attributes_set = 0;
  unsigned long long attributes_clear = 0;
  bool recursive = false;
  unsigned mode = 0;
  /// bind: a host path that a root deskd opens itself before the clone (open_tree), since
  /// the desk's uid may not be able to search its way there.
  bool opened_by_daemon = false;
  /// bind: the detached tree opened for it, attached with move_mount instead; -1: none.
  int source_fd = -1;
  std::string description{};  ///< For the error message: what this step is for.
};

/// The base tmpfs holds these two folders and the empty file masks are bound from.
inline constexpr const char* kNewRoot = "/newroot";
inline constexpr const char* kOldRoot = "/oldroot";
inline constexpr const char* kEmptyFile = "/empty-mask-file";
/// network = "allowlist": the desk's /etc/hosts (policy/egress_names.h), written in the base
/// tmpfs and bound read-only over the view's /etc/hosts.
inline constexpr const char* kEgressHostsFile = "/egress-hosts";

/// Where a path of the view is while the new root is built: under kNewRoot.
inline std::string in_new_root(std::string_view path) { return std::string(kNewRoot).append(path); }

/// Computes the steps for `spec`. Pure: reads the host only to see which writable
/// places exist.
std::vector<MountStep> plan_mounts(const SandboxSpec& spec);

/// Parent, under a root deskd: opens the host path of every `opened_by_daemon` bind as a
/// detached tree (no link followed at the end) and records its descriptor in the step. The
/// descriptors live as long as the returned vector. Without root, binds stay path-based.
Result<std::vector<UniqueFd>> open_trees_for_binds(std::vector<MountStep>& steps);

/// Carries out `steps` in the child, in order, stopping at the first that fails, whose
/// description and target the result names. Async-signal-safe.
StepResult run_mount_plan(const std::vector<MountStep>& steps);

}  // namespace deskd::sandbox
