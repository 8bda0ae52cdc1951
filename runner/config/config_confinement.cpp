#include "runner/config/config_confinement.h"

#include <sys/stat.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <string>
#include <vector>

#include "policy/path_resolution.h"

namespace deskd::app {
namespace {

using std::filesystem::path;

// The sandbox's own list, as paths.
const std::vector<path> kShownSystemFolders(std::begin(sandbox::kShownSystemFolders),
                                            std::end(sandbox::kShownSystemFolders));

// The system's own trees: nothing inside them is a desk's, whatever the host shows of them.
const std::array<path, 14> kSystemTrees = {"/usr", "/bin",  "/sbin", "/lib", "/lib32", "/lib64",   "/libx32",
                                           "/etc", "/boot", "/dev",  "/proc", "/sys",  "/run", "/var/run"};

// Folders every user and service of the host shares: a desk may live inside one, never be it.
// /var/tmp is /tmp's twin that survives a reboot.
const std::array<path, 9> kSharedFolders = {"/home", "/root", "/var", "/srv", "/tmp",
                                            "/mnt",  "/media", "/opt", "/var/tmp"};

bool is_one_of(const path& folder, std::span<const path> folders) {
  return std::find(folders.begin(), folders.end(), folder) != folders.end();
}

std::string octal_mode(mode_t mode) {
  char text[8];
  std::snprintf(text, sizeof text, "%04o", static_cast<unsigned>(mode & 07777));
  return text;
}

}  // namespace

std::span<const path> shown_system_folders() { return kShownSystemFolders; }

bool is_inside_shown_system_folder(const path& candidate) {
  return std::any_of(kShownSystemFolders.begin(), kShownSystemFolders.end(),
                     [&](const path& folder) { return policy::is_same_or_inside(candidate, folder); });
}

Result<void> check_desk_folder_placement(const path& desk_folder) {
  const std::string shown = desk_folder.native();
  if (desk_folder == desk_folder.root_path()) {
    return Error::refusal("the desk folder " + shown +
                   " is the root of the host; a desk needs a folder of its own, for example under /srv or /home");
  }
  if (is_one_of(desk_folder, kSystemTrees)) {
    return Error::refusal("the desk folder " + shown +
                   " is a system folder; a desk needs a folder of its own, for example under /srv or /home");
  }
  for (const auto& tree : kSystemTrees) {
    if (!policy::is_strictly_inside(desk_folder, tree)) continue;
    return Error::refusal("the desk folder " + shown + " lies inside the system folder " + tree.native() +
                   ", which the sandbox shows read-only to every desk or not at all; put the desk in a folder of "
                   "its own, for example under /srv or /home");
  }
  if (is_one_of(desk_folder, kSharedFolders)) {
    return Error::refusal("the desk folder " + shown +
                   " is a folder the whole host shares; give the desk a folder of its own inside it, such as " +
                   (desk_folder / "desks" / "NAME").native());
  }
  return success();
}

Result<void> check_read_only_path(const path& read_only_path) {
  const std::string shown = read_only_path.native();
  if (read_only_path == read_only_path.root_path()) {
    return Error::refusal("the read-only path / would show the whole host; write host_view = \"full\" for that");
  }
  if (read_only_path == "/tmp") {
    return Error::refusal("the read-only path /tmp would cover the sandbox's own /tmp; name a folder inside it instead");
  }
  for (const char* replaced : {"/proc", "/sys", "/dev", "/run", "/var/run"}) {
    if (!policy::is_same_or_inside(read_only_path, replaced)) continue;
    return Error::refusal("the read-only path " + shown + " lies in " + replaced +
                   ", which the sandbox makes up itself so that no host device or Unix socket is reachable; name a "
                   "folder elsewhere");
  }
  return success();
}

Result<void> check_desk_folder_reachable(const path& desk_folder, uid_t deskd_uid, sandbox::HostView view) {
  const path components = desk_folder.relative_path();
  path ancestor = desk_folder.root_path();
  for (auto component = components.begin(); component != components.end(); ++component) {
    // The folder itself is given to the desk's uid; only the way to it must be open.
    if (std::next(component) == components.end()) break;
    ancestor /= *component;
    // Elsewhere the minimal view builds the way to the desk on its own tmpfs, open to the
    // desk; the full view shows the host's own folders on the way.
    if (view == sandbox::HostView::minimal && !is_inside_shown_system_folder(ancestor)) continue;
    struct stat status {};
    if (::stat(ancestor.c_str(), &status) != 0) continue;  // `deskd check` may not look where deskd can
    if ((status.st_mode & S_IXOTH) != 0) continue;
    // Group search is not counted: the desk's gid is its own under a root deskd, and failing
    // here is better than a desk that cannot start.
    if (deskd_uid != 0 && status.st_uid == deskd_uid && (status.st_mode & S_IXUSR) != 0) continue;
    return Error::refusal("the desk folder " + desk_folder.native() + " cannot be reached by the desk's sandbox: its ancestor " +
                   ancestor.native() + " has mode " + octal_mode(status.st_mode) +
                   ", which lets no other user search it; move the desk or run `chmod o+x " + ancestor.native() +
                   "`");
  }
  return success();
}

}  // namespace deskd::app
