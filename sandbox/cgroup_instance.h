#pragma once
// Where this deskd process makes its desks' cgroups: one folder of its own, named
// `instance-<random hex>`, under each cgroup parent deskd may use (the delegated cgroup v2
// subtree, or deskd's own folder in each cgroup v1 hierarchy). Names carry no host pid (a
// v1 sandbox sees its path in /proc/self/cgroup); instead deskd holds an flock on its
// instance folders for as long as it runs, so a later deskd can tell the folders of a
// killed one (unlocked) and remove whatever of them is empty. Internal to cgroup_limits.cpp.

#include <optional>
#include <string>
#include <vector>

#include "base/result.h"
#include "base/unique_fd.h"

namespace deskd::sandbox::cgroup_instance {

/// The folders this deskd makes desk cgroups in.
struct Parents {
  bool version2 = true;
  std::string unified;             ///< v2: the instance folder
  std::string memory, pids;        ///< v1: the instance folder in each hierarchy
  std::optional<std::string> cpu;  ///< v1: in the cpu hierarchy, where deskd may use it
};

/// This process's instance folders, made (and the stale ones of killed deskd removed) at the
/// first call; nullptr when the host gives deskd no cgroup (the rlimit fallback applies);
/// an error when it does but the folders cannot be made.
Result<const Parents*> parents();

/// A process that runs one sandbox and exits (`deskd sandbox`) needs no instance folder to
/// hold desk and sandbox cgroups: its sandbox's cgroup is an instance folder of its own in
/// each hierarchy, made and locked the same way (so a later deskd removes what a killed one
/// left), one mkdir and one rmdir per hierarchy instead of three (bench/README.md, cold
/// start).
struct SingleUseFolders {
  bool version2 = true;
  /// v2: the one folder; v1: memory, pids, then cpu when `with_cpu`.
  std::vector<std::string> folders;
  std::vector<UniqueFd> locks;  ///< flock'ed; hold them until the folders are removed
};

/// Makes them, for a sandbox with a CPU limit when `with_cpu`; nullopt when the host gives
/// deskd no cgroup; an error when it does but they cannot be made (or a CPU limit cannot be).
Result<std::optional<SingleUseFolders>> make_single_use(bool with_cpu);

/// Whether parents() would find cgroups to use, without creating anything (for doctor):
/// "v2", "v1", or nullopt. For v1, `cpu` says whether a cpu hierarchy is usable.
struct Kind {
  bool version2 = true;
  bool cpu = false;
};
std::optional<Kind> kind();

/// Writes `text` to a cgroup file with one write(2); names the file when it fails.
Result<void> write_file(const std::string& path, const std::string& text);

}  // namespace deskd::sandbox::cgroup_instance
