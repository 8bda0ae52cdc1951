#include "sandbox/mount_plan.h"

#include <fcntl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <fstream>

#include "policy/path_resolution.h"
#include "sandbox/kernel_masks.h"
#include "sandbox/trust_bundle.h"

namespace deskd::sandbox {
namespace {

using Operation = MountStep::Operation;
constexpr unsigned long kQuiet = MS_NOSUID | MS_NODEV;

std::string in_old_root(const std::filesystem::path& path) { return std::string(kOldRoot) + path.native(); }

MountStep step(Operation operation, std::string target, std::string description) {
  MountStep result{.operation = operation};
  result.target = std::move(target);
  result.description = std::move(description);
  return result;
}

MountStep tmpfs(std::string target, std::string options, unsigned long flags, std::string description) {
  MountStep result = step(Operation::mount_tmpfs, std::move(target), std::move(description));
  result.data = std::move(options);
  result.flags = flags;
  return result;
}

MountStep bind_step(std::string source, std::string target, bool recursive, std::string description) {
  MountStep result = step(Operation::bind, std::move(target), std::move(description));
  result.source = std::move(source);
  result.recursive = recursive;
  return result;
}

MountStep attributes(std::string target, unsigned long long set, bool recursive, std::string description) {
  MountStep result = step(Operation::set_attributes, std::move(target), std::move(description));
  result.attributes_set = set;
  result.recursive = recursive;
  return result;
}

// Every folder from just below `top` down to `path`, for mkdir steps inside a tmpfs.
std::vector<std::filesystem::path> folders_below(const std::filesystem::path& top,
                                                 const std::filesystem::path& path) {
  std::vector<std::filesystem::path> folders;
  std::filesystem::path current = top;
  for (const auto& part : path.lexically_relative(top)) {
    if (part.empty() || part == ".") continue;
    current /= part;
    folders.push_back(current);
  }
  return folders;
}

void plan_devices(const SandboxSpec& spec, std::vector<MountStep>& steps) {
  steps.push_back(tmpfs(in_new_root("/dev"), "mode=0755,size=64k", MS_NOSUID | MS_NOEXEC,
                        "mount a tmpfs for the minimal /dev"));
  for (const char* device : {"null", "zero", "full", "random", "urandom", "tty"}) {
    const std::string path = std::string("/dev/") + device;
    MountStep file = step(Operation::create_file, in_new_root(path), "create " + path);
    file.mode = 0666;
    steps.push_back(file);
    steps.push_back(bind_step(in_old_root(path), in_new_root(path), false, "bind the host's " + path));
  }
  for (const char* folder : {"/dev/pts", "/dev/shm"}) {
    steps.push_back(step(Operation::make_directory, in_new_root(folder), std::string("create ") + folder));
  }
  steps.push_back(step(Operation::mount_devpts, in_new_root("/dev/pts"), "mount a new devpts on /dev/pts"));
  const std::pair<const char*, const char*> links[] = {
      {"pts/ptmx", "/dev/ptmx"},         {"/proc/self/fd", "/dev/fd"},
      {"/proc/self/fd/0", "/dev/stdin"}, {"/proc/self/fd/1", "/dev/stdout"},
      {"/proc/self/fd/2", "/dev/stderr"}};
  for (const auto& [text, link] : links) {
    MountStep symlink = step(Operation::create_symlink, in_new_root(link), std::string("create ") + link);
    symlink.source = text;
    steps.push_back(symlink);
  }
  steps.push_back(tmpfs(in_new_root("/dev/shm"),
                        "mode=1777,size=" + std::to_string(spec.limits.tmp_size_bytes), kQuiet,
                        "mount a tmpfs on /dev/shm"));
  steps.push_back(attributes(in_new_root("/dev"), MOUNT_ATTR_RDONLY, false, "make /dev read-only"));
}

bool is_kind(const std::filesystem::path& path, policy::WritablePlace::Kind kind) {
  struct stat status {};
  if (::lstat(path.c_str(), &status) != 0) return false;
  return kind == policy::WritablePlace::Kind::folder ? S_ISDIR(status.st_mode) : S_ISREG(status.st_mode);
}

}  // namespace

namespace {

constexpr unsigned long long kReadOnly = MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV;

// True when `path` is `folder` or inside it, for any folder in `folders`.
bool inside_any(const std::filesystem::path& path, const std::vector<std::filesystem::path>& folders) {
  return std::any_of(folders.begin(), folders.end(),
                     [&](const auto& folder) { return policy::is_same_or_inside(path, folder); });
}

// Creates what the new root lacks on the way to `path` (mkdir is EEXIST-tolerant, and inside
// a read-only bind an existing folder answers EEXIST before the file system's EROFS), then
// the mount point itself: a folder, or an empty file for a file.
void plan_mount_point(const std::filesystem::path& path, bool is_folder, std::vector<MountStep>& steps) {
  for (const auto& folder : folders_below("/", path.parent_path())) {
    steps.push_back(step(Operation::make_directory, in_new_root(folder.native()), "create " + folder.native() + " on the way"));
  }
  if (is_folder) {
    steps.push_back(step(Operation::make_directory, in_new_root(path.native()), "create the mount point " + path.native()));
  } else {
    MountStep file = step(Operation::create_file, in_new_root(path.native()), "create the mount point " + path.native());
    file.mode = 0;
    steps.push_back(file);
  }
}

// A host folder (or file) shown at its own path; under a root deskd the parent opens it
// (deskd may reach folders the desk's uid cannot search, such as a 0700 parent).
void plan_shown(const std::filesystem::path& path, bool recursive, unsigned long long set, const std::string& what,
                std::vector<MountStep>& steps) {
  MountStep shown = bind_step(in_old_root(path), in_new_root(path.native()), recursive, "bind " + what);
  shown.opened_by_daemon = true;
  steps.push_back(shown);
  steps.push_back(attributes(in_new_root(path.native()), set, recursive,
                             "make " + what + ((set & MOUNT_ATTR_RDONLY) != 0 ? " read-only" : " nosuid and nodev")));
}

bool is_folder_on_host(const std::filesystem::path& path) {
  struct stat status {};
  return ::stat(path.c_str(), &status) == 0 && S_ISDIR(status.st_mode);
}

// The minimal view: an empty tmpfs root holding the system folders, read-only, and the
// paths the settings name; links such as /bin -> usr/bin are recreated as links.
void plan_minimal_root(const SandboxSpec& spec, std::vector<MountStep>& steps) {
  steps.push_back(tmpfs(kNewRoot, "mode=0755,size=1m", kQuiet, "mount the tmpfs of the new root"));
  for (const char* folder : kShownSystemFolders) {
    struct stat status {};
    if (::lstat(folder, &status) != 0) continue;
    if (S_ISLNK(status.st_mode)) {
      char text[4096];
      const ssize_t length = ::readlink(folder, text, sizeof text - 1);
      if (length <= 0) continue;
      MountStep link = step(Operation::create_symlink, in_new_root(folder), std::string("recreate the link ") + folder);
      link.source.assign(text, static_cast<std::size_t>(length));
      steps.push_back(link);
      continue;
    }
    if (!S_ISDIR(status.st_mode)) continue;
    steps.push_back(step(Operation::make_directory, in_new_root(folder), std::string("create ") + folder));
    steps.push_back(bind_step(in_old_root(folder), in_new_root(folder), true, std::string("bind the host's ") + folder));
    steps.push_back(attributes(in_new_root(folder), kReadOnly, true, std::string("make ") + folder + " read-only"));
  }
  for (const auto& path : spec.read_only_paths) {
    const bool folder = is_folder_on_host(path);
    plan_mount_point(path, folder, steps);
    plan_shown(path, folder, kReadOnly, "the read-only path " + path.native(), steps);
  }
  for (const char* folder : {"/proc", "/sys", "/dev", "/tmp"}) {
    steps.push_back(step(Operation::make_directory, in_new_root(folder), std::string("create ") + folder));
  }
}

// network = "allowlist": the exact allowed names on their loopback addresses, in a file the
// desk sees as /etc/hosts (read-only, like the rest of /etc). The file tools' sandbox gets
// the same plan, so both see one file. No /etc/hosts in the view to cover: the launch fails.
void plan_egress_hosts(const SandboxSpec& spec, std::vector<MountStep>& steps) {
  constexpr std::size_t kHostFileBytes = 64 * 1024;  // localhost lines come first; enough
  std::string host_file(kHostFileBytes, '\0');
  std::ifstream host("/etc/hosts", std::ios::binary);
  host.read(host_file.data(), static_cast<std::streamsize>(host_file.size()));
  host_file.resize(static_cast<std::size_t>(std::max<std::streamsize>(host.gcount(), 0)));
  MountStep file = step(Operation::write_file, kEgressHostsFile, "write the desk's /etc/hosts (its allowed names)");
  file.data = policy::egress_hosts_file(host_file, spec.egress_names);
  file.mode = 0644;
  steps.push_back(file);
  steps.push_back(bind_step(kEgressHostsFile, in_new_root("/etc/hosts"), false,
                       "bind the desk's /etc/hosts (its allowed names) over the view's"));
  steps.push_back(attributes(in_new_root("/etc/hosts"), kReadOnly, false, "make the desk's /etc/hosts read-only"));
}

}  // namespace

std::vector<MountStep> plan_mounts(const SandboxSpec& spec) {
  std::vector<MountStep> steps;
  steps.push_back(step(Operation::make_mounts_private, "/", "make every mount private"));
  // 256k: the masks' empty file, and the desk's /etc/hosts (at most ~70 KiB).
  steps.push_back(tmpfs("/tmp", "mode=0755,size=256k", kQuiet, "mount the private base tmpfs"));
  steps.push_back(step(Operation::make_directory, std::string("/tmp") + kNewRoot, "create the new root"));
  steps.push_back(step(Operation::make_directory, std::string("/tmp") + kOldRoot, "create the old root"));
  MountStep empty = step(Operation::create_file, std::string("/tmp") + kEmptyFile, "create the mask file");
  empty.mode = 0;
  steps.push_back(empty);
  steps.push_back(step(Operation::pivot_onto_base, "/tmp", "pivot onto the base tmpfs"));

  const bool minimal = spec.host_view == HostView::minimal;
  if (minimal) {
    plan_minimal_root(spec, steps);
  } else {
    steps.push_back(bind_step(kOldRoot, kNewRoot, true, "bind the host's root"));
    steps.push_back(attributes(kNewRoot, kReadOnly, true, "make the host's root read-only, nosuid and nodev"));
  }
  steps.push_back(step(Operation::mount_proc, in_new_root("/proc"), "mount a new /proc"));
  if (spec.network != NetworkMode::host) {
    // The host's /sys names its network interfaces and their addresses; a sysfs mounted in
    // the sandbox's own network namespace shows only `lo`.
    steps.push_back(step(Operation::mount_sysfs, in_new_root("/sys"),
                         "mount a read-only /sys of the sandbox's network (an empty one where a container forbids it)"));
  }
  plan_kernel_masks(steps);
  plan_devices(spec, steps);
  steps.push_back(tmpfs(in_new_root("/tmp"),
                        "mode=1777,size=" + std::to_string(spec.limits.tmp_size_bytes), kQuiet,
                        "mount a tmpfs on /tmp"));
  for (const auto& folder : spec.runtime_directories) {
    steps.push_back(tmpfs(in_new_root(folder.native()), "mode=0755,size=4k", kQuiet | MS_NOEXEC | MS_RDONLY,
                          "cover " + folder.native() + " so the host's sockets are out of reach"));
  }

  // Full view: people's homes are covered like the runtime folders, but by a tmpfs that
  // stays writable until the end, so that the mount points of what the desk is shown inside
  // a home (its own folder, read-only paths) can be made in it; sealed before the pivot.
  for (const auto& home : spec.covered_homes) {
    steps.push_back(tmpfs(in_new_root(home.native()), "mode=0755,size=16k", kQuiet | MS_NOEXEC,
                          "cover the home folder " + home.native()));
  }
  if (!minimal) {
    for (const auto& path : spec.read_only_paths) {
      if (!inside_any(path, spec.covered_homes)) continue;
      const bool folder = is_folder_on_host(path);
      plan_mount_point(path, folder, steps);
      plan_shown(path, folder, kReadOnly, "the read-only path " + path.native(), steps);
    }
  }

  // The desk folder, read-only, always bound on its own: after the sandbox's /tmp (a desk
  // under /tmp stays visible), on folders created for it where the view has none, and opened
  // by a root deskd itself, so a parent the desk's uid cannot search (0700) does not matter.
  const auto& desk = spec.confinement.desk_directory();
  std::vector<std::filesystem::path> shown;
  if (minimal) {
    shown.assign(std::begin(kShownSystemFolders), std::end(kShownSystemFolders));
    shown.insert(shown.end(), spec.read_only_paths.begin(), spec.read_only_paths.end());
  }
  const bool covered = policy::is_strictly_inside(desk, "/tmp") || policy::is_strictly_inside(desk, "/dev/shm") ||
                       inside_any(desk, spec.runtime_directories) || inside_any(desk, spec.covered_homes);
  if ((minimal && !inside_any(desk, shown)) || covered) plan_mount_point(desk, true, steps);
  plan_shown(desk, true, kReadOnly, "the desk folder", steps);

  for (const auto& place : spec.confinement.writable_places()) {
    if (!is_kind(place.path, place.kind)) continue;
    plan_shown(place.path, false, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV, "the writable place " + place.path.native(),
               steps);
  }
  if (spec.network == NetworkMode::allowlist) plan_egress_hosts(spec, steps);
  for (const auto& hidden : spec.confinement.hidden_paths()) {
    steps.push_back(step(Operation::mask, in_new_root(hidden.native()), "mask the hidden path"));
  }
  // After the masks: the bundle lies in deskd's state folder, a hidden path, and is bound
  // from the host's side over a file of the view's /etc that no mask may cover.
  plan_trust_bundle(spec, steps);
  for (const auto& home : spec.covered_homes) {
    steps.push_back(attributes(in_new_root(home.native()), MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV, false,
                               "make the cover of " + home.native() + " read-only"));
  }
  if (minimal) {
    // Nothing may be created at the top of the view: the tmpfs root goes read-only last.
    steps.push_back(attributes(kNewRoot, MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV, false,
                               "make the new root read-only"));
  }
  steps.push_back(step(Operation::pivot_into_new_root, kNewRoot, "pivot into the new root"));
  steps.push_back(step(Operation::change_directory, spec.working_directory.native(),
                       "enter the desk folder"));
  return steps;
}

namespace {

int set_mount_attributes(const char* target, unsigned long long set, unsigned long long clear, bool recursive) {
  mount_attr attributes{};
  attributes.attr_set = set;
  attributes.attr_clr = clear;
  return static_cast<int>(::syscall(SYS_mount_setattr, AT_FDCWD, target,
                                    recursive ? AT_RECURSIVE : 0, &attributes, sizeof attributes));
}

int pivot_root(const char* new_root, const char* put_old) {
  return static_cast<int>(::syscall(SYS_pivot_root, new_root, put_old));
}

// Covers a hidden path: a folder with an empty tmpfs that nobody may list (mode 000), a
// file (or socket, device, FIFO) with the empty mode-000 file. Both read-only, so the
// sandbox cannot chmod them open. A path that does not exist in the new root is already
// out of sight.
int mask(const char* target) {
  struct stat status {};
  if (::lstat(target, &status) != 0) return errno == ENOENT ? 0 : -1;
  if (S_ISLNK(status.st_mode)) return 0;
  if (S_ISDIR(status.st_mode)) {
    return ::mount("tmpfs", target, "tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC,
                   "mode=000,size=4k");
  }
  if (::mount(kEmptyFile, target, nullptr, MS_BIND, nullptr) != 0) return -1;
  return set_mount_attributes(target, MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC,
                              0, false);
}

// One step's system calls, as a system call answers: 0, or -1 with errno, which
// run_mount_plan turns into the step's result.
int carry_out(const MountStep& s) {
  const char* target = s.target.c_str();
  switch (s.operation) {
    case Operation::make_mounts_private:
      return ::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr);
    case Operation::mount_tmpfs:
      return ::mount("tmpfs", target, "tmpfs", s.flags, s.data.c_str());
    case Operation::make_directory:
      return ::mkdir(target, 0755) == 0 || errno == EEXIST ? 0 : -1;
    case Operation::create_file:
      // An empty regular file in one system call (open and close took two); like
      // O_CREAT | O_EXCL it never follows a link at the end. No capability is needed for S_IFREG.
      return ::mknod(target, S_IFREG | s.mode, 0) == 0 || errno == EEXIST ? 0 : -1;
    case Operation::create_symlink:
      return ::symlink(s.source.c_str(), target) == 0 || errno == EEXIST ? 0 : -1;
    case Operation::write_file: {
      const int fd = ::open(target, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, s.mode);
      if (fd < 0) return -1;
      if (::fchmod(fd, s.mode) != 0) {  // whatever the umask
        const int saved = errno;
        ::close(fd);
        errno = saved;
        return -1;
      }
      std::size_t done = 0;
      while (done < s.data.size()) {
        const ssize_t written = ::write(fd, s.data.data() + done, s.data.size() - done);
        if (written < 0 && errno == EINTR) continue;
        if (written <= 0) {
          const int saved = written < 0 ? errno : ENOSPC;
          ::close(fd);
          errno = saved;
          return -1;
        }
        done += static_cast<std::size_t>(written);
      }
      return ::close(fd);
    }
    case Operation::pivot_onto_base:
      if (::chdir(target) != 0) return -1;
      if (pivot_root(".", kOldRoot + 1) != 0) return -1;
      return ::chdir("/");
    case Operation::bind:
      if (s.source_fd >= 0) {
        return static_cast<int>(::syscall(SYS_move_mount, s.source_fd, "", AT_FDCWD, target, MOVE_MOUNT_F_EMPTY_PATH));
      }
      return ::mount(s.source.c_str(), target, nullptr, MS_BIND | (s.recursive ? MS_REC : 0), nullptr);
    case Operation::set_attributes:
      return set_mount_attributes(target, s.attributes_set, s.attributes_clear, s.recursive);
    case Operation::mask:
      return mask(target);
    case Operation::make_read_only_if_present: {
      struct stat status {};
      if (::lstat(target, &status) != 0) return errno == ENOENT ? 0 : -1;
      if (::mount(target, target, nullptr, MS_BIND | MS_REC, nullptr) != 0) return -1;
      return set_mount_attributes(target, MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV, 0, true);
    }
    case Operation::mount_proc:
      return ::mount("proc", target, "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, nullptr);
    case Operation::mount_sysfs:
      if (::mount("sysfs", target, "sysfs", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, nullptr) == 0) return 0;
      // A container that masks parts of its own /sys (Podman, Kubernetes) leaves no fully
      // visible sysfs, and the kernel refuses a new one in a user namespace. An empty /sys
      // shows the desk less, never more, so the launch goes on without one.
      if (errno != EPERM) return -1;
      return ::mount("tmpfs", target, "tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, "size=4k,mode=0555");
    case Operation::mount_devpts:
      return ::mount("devpts", target, "devpts", MS_NOSUID | MS_NOEXEC,
                     "newinstance,ptmxmode=0666,mode=0620");
    case Operation::pivot_into_new_root:
      // The host stays reachable through /oldroot until it is detached; after pivot_root(".",
      // ".") the base tmpfs sits beneath the new root and is detached too.
      if (::umount2(kOldRoot, MNT_DETACH) != 0) return -1;
      if (::chdir(target) != 0) return -1;
      if (pivot_root(".", ".") != 0) return -1;
      if (::umount2(".", MNT_DETACH) != 0) return -1;
      return ::chdir("/");
    case Operation::change_directory:
      return ::chdir(target);
  }
  errno = EINVAL;
  return -1;
}

}  // namespace

Result<std::vector<UniqueFd>> open_trees_for_binds(std::vector<MountStep>& steps) {
  std::vector<UniqueFd> trees;
  if (::geteuid() != 0) return trees;
  const std::size_t prefix = std::string_view(kOldRoot).size();
  for (MountStep& s : steps) {
    if (s.operation != Operation::bind || !s.opened_by_daemon) continue;
    const std::string host_path = s.source.substr(prefix);
    const unsigned flags = OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_SYMLINK_NOFOLLOW | (s.recursive ? AT_RECURSIVE : 0);
    UniqueFd tree(static_cast<int>(::syscall(SYS_open_tree, AT_FDCWD, host_path.c_str(), flags)));
    if (!tree) {
      return Error::from_errno(errno, "The sandbox could not be set up: opening " + host_path + " to " + s.description +
                                          " (open_tree) failed");
    }
    // The copy is a peer of the host's mount: on a host whose / is shared (any systemd
    // host), every mount the sandbox then made beneath it (the desk's writable places)
    // appeared in the host's mount table too, four more at each launch. Private first.
    mount_attr private_propagation{};
    private_propagation.propagation = MS_PRIVATE;
    if (::syscall(SYS_mount_setattr, tree.get(), "", AT_EMPTY_PATH | (s.recursive ? AT_RECURSIVE : 0),
                  &private_propagation, sizeof private_propagation) != 0) {
      return Error::from_errno(errno, "The sandbox could not be set up: making its copy of " + host_path +
                                          " private (mount_setattr) failed");
    }
    s.source_fd = tree.get();
    trees.push_back(std::move(tree));
  }
  return trees;
}

StepResult run_mount_plan(const std::vector<MountStep>& steps) {
  for (const MountStep& s : steps) {
    if (carry_out(s) != 0) return step_failed(s.description.c_str(), s.target.c_str());
  }
  return step_succeeded();
}

}  // namespace deskd::sandbox
