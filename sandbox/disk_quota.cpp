#include "sandbox/disk_quota.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <sys/sysmacros.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "base/unique_fd.h"
#include "sandbox/loop_device.h"
#include "sandbox/mount_table.h"

namespace deskd::sandbox {

namespace fs = std::filesystem;

// What deskd mounted (or adopted) for one image, as deskd resolved it: the release works
// from these paths and numbers, never from what the desk may have changed since.
struct QuotaSite {
  fs::path image;
  fs::path mount_point;
  struct stat image_status {};
  std::string loop_device;
  dev_t image_device = 0;  ///< the mounted image's device number, as the mount table shows it
  std::vector<fs::path> places;
};

// Every desk of this deskd holding one image's mounts (a reload may assemble a desk's
// successor while the old one still holds them): the last to let go takes them down.
struct QuotaHolders {
  std::mutex mutex;  ///< held while mounting or taking down
  int count = 0;     ///< guarded by the registry's mutex
  std::optional<QuotaSite> site;
};

namespace {

std::mutex registry_mutex;
std::map<std::string, std::shared_ptr<QuotaHolders>> registry;  // by the image's resolved path

Error failed(int error_number, const std::string& step) {
  return Error::from_errno(error_number, "Giving the desk's writable places their disk quota failed: " + step);
}

std::string fd_path(int fd) { return "/proc/self/fd/" + std::to_string(fd); }

// Runs a helper program with an empty environment and only standard streams, and waits for it.
Result<void> run_program(const std::vector<std::string>& command) {
  std::vector<char*> arguments;
  for (const auto& each : command) arguments.push_back(const_cast<char*>(each.c_str()));
  arguments.push_back(nullptr);
  char* const environment[] = {const_cast<char*>("PATH=/usr/sbin:/usr/bin:/sbin:/bin"), nullptr};
  pid_t child = -1;
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
  // Nothing else of deskd's reaches the helper: Asio opens its sockets (the control socket's
  // listener, the clients' connections) without close-on-exec.
  posix_spawn_file_actions_addclosefrom_np(&actions, 3);
  const int spawned = ::posix_spawn(&child, arguments[0], &actions, nullptr, arguments.data(), environment);
  posix_spawn_file_actions_destroy(&actions);
  if (spawned != 0) return failed(spawned, "starting " + command[0]);
  int status = 0;
  if (retry_on_eintr([&] { return ::waitpid(child, &status, 0); }) != child) return failed(errno, "waiting for " + command[0]);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    return failed(EIO, command[0] + " exited with status " + std::to_string(WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status)));
  }
  return success();
}

Result<void> make_image(const fs::path& image, const DiskQuota& quota, uid_t uid, gid_t gid) {
  UniqueFd file(::open(image.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600));
  if (!file) return failed(errno, "creating " + image.native());
  if (::ftruncate(file.get(), static_cast<off_t>(quota.bytes)) != 0) {
    const int error_number = errno;
    ::unlink(image.c_str());
    return failed(error_number, "sizing " + image.native());
  }
  file.reset();
  auto made = run_program({"/sbin/mkfs.ext4", "-q", "-F", "-m", "0", "-N", std::to_string(quota.inodes), "-E",
                           "root_owner=" + std::to_string(uid) + ":" + std::to_string(gid), image.native()});
  if (!made.ok()) ::unlink(image.c_str());
  return made;
}

// A killed deskd may have died between a bind and its remount: every mount of the image
// deskd keeps is made nosuid and nodev again. `path` is opened without following a link and
// must be the image's mount (a remount through it changes that mount only).
Result<void> make_nosuid_nodev(const fs::path& path, dev_t image_device) {
  UniqueFd top(::open(path.c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC));
  struct stat status {};
  if (!top || ::fstat(top.get(), &status) != 0) return failed(errno, "opening " + path.native());
  if (status.st_dev != image_device) return failed(EINVAL, path.native() + " is not the image's mount");
  if (::mount(nullptr, fd_path(top.get()).c_str(), nullptr, MS_BIND | MS_REMOUNT | MS_NOSUID | MS_NODEV, nullptr) != 0) {
    return failed(errno, "making " + path.native() + " nosuid and nodev");
  }
  return success();
}

// What the mount table shows at `path` must be the image (showing `root`) or nothing; a
// stacked copy a killed deskd left is taken off. Returns how many of the image's mounts stay (0 or 1).
Result<std::size_t> adopt_mounts_at(const std::vector<MountEntry>& table, const fs::path& path, dev_t image_device,
                                    const std::string& root) {
  const auto found = mounts_at(table, path.native());
  for (const auto& mount : found) {
    if (mount.device != image_device || mount.root != root) {
      return Error::make(ErrorCode::refused, "Giving the desk's writable places their disk quota was refused: " +
                                                 path.native() + " has a mount that is not the desk's image (" +
                                                 mount.root + " of device " + std::to_string(major(mount.device)) +
                                                 ":" + std::to_string(minor(mount.device)) +
                                                 "); deskd mounts nothing beside it. Unmount it, then start the desk.");
    }
  }
  for (std::size_t extra = 1; extra < found.size(); ++extra) {
    if (::umount2(path.c_str(), UMOUNT_NOFOLLOW) != 0) return failed(errno, "taking a stacked mount off " + path.native());
  }
  return found.empty() ? 0 : 1;
}

// The place inside the image, created for the desk (and filled from the host's the first
// time), then bound over the host's. Both ends are opened without following a link (the
// desk owns what is inside the image) and bound through their descriptors.
Result<void> bind_place(const policy::WritablePlace& place, const fs::path& mount_point, int image_root,
                        dev_t image_device, uid_t uid, gid_t gid) {
  const bool folder = place.kind == policy::WritablePlace::Kind::folder;
  const std::string name = place.path.filename();
  const fs::path inside = mount_point / name;
  struct stat status {};
  if (::fstatat(image_root, name.c_str(), &status, AT_SYMLINK_NOFOLLOW) != 0) {
    const int made = folder ? ::mkdirat(image_root, name.c_str(), 0755)
                            : [&] {
                                const int fd = ::openat(image_root, name.c_str(),
                                                        O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0644);
                                return fd >= 0 ? ::close(fd) : -1;
                              }();
    if (made != 0) return failed(errno, "creating " + inside.native());
    if (::fchownat(image_root, name.c_str(), uid, gid, AT_SYMLINK_NOFOLLOW) != 0) {
      return failed(errno, "giving " + inside.native() + " to the desk");
    }
    // What the desk had so far moves in with it; links are copied as links.
    const std::string from = folder ? place.path.native() + "/." : place.path.native();
    DESKD_RETURN_IF_ERROR(run_program({"/bin/cp", "-a", "--no-dereference", from, inside.native()}));
  }
  const mode_t kind = folder ? S_IFDIR : S_IFREG;
  const std::string kind_name = folder ? "folder" : "file";
  UniqueFd source(::openat(image_root, name.c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC));
  if (!source || ::fstat(source.get(), &status) != 0 || (status.st_mode & S_IFMT) != kind) {
    return failed(source ? EINVAL : errno, inside.native() + " is not a " + kind_name + " (a link is not followed)");
  }
  UniqueFd target(::open(place.path.c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC));
  if (!target || ::fstat(target.get(), &status) != 0 || (status.st_mode & S_IFMT) != kind) {
    return failed(target ? EINVAL : errno, place.path.native() + " is not a " + kind_name + " (a link is not followed)");
  }
  if (::mount(fd_path(source.get()).c_str(), fd_path(target.get()).c_str(), nullptr, MS_BIND, nullptr) != 0) {
    return failed(errno, "binding " + inside.native() + " over " + place.path.native());
  }
  return make_nosuid_nodev(place.path, image_device);
}

// Mounts the image and binds the places, adopting whatever of it is there already. `site`
// records each mount before it is made, so that a failure can take down what was done.
Result<void> set_up(const SandboxSpec& spec, const fs::path& folder, const DiskQuota& quota, QuotaSite& site) {
  site.image = folder / "places.img";
  site.mount_point = folder / "places";
  struct stat status {};
  if (::lstat(site.image.c_str(), &status) != 0) {
    if (errno != ENOENT) return failed(errno, "examining " + site.image.native());
    DESKD_RETURN_IF_ERROR(make_image(site.image, quota, spec.root_daemon_uid, spec.root_daemon_gid));
  }
  UniqueFd backing(::open(site.image.c_str(), O_RDWR | O_CLOEXEC | O_NOFOLLOW));
  if (!backing) return failed(errno, "opening " + site.image.native());
  if (::fstat(backing.get(), &site.image_status) != 0 || !S_ISREG(site.image_status.st_mode)) {
    return failed(EINVAL, site.image.native() + " is not a regular file");
  }

  // A deskd killed while it ran left its loop device attached (the image's mount holds it):
  // that one is used again, never a second one.
  auto attached = loop_devices_backed_by(site.image.native(), site.image_status);
  if (!attached.ok()) return failed(attached.error().error_number, attached.error().what);
  if (attached->size() > 1) {
    return Error::make(ErrorCode::refused, "Giving the desk's writable places their disk quota was refused: " +
                                               site.image.native() + " is attached to " + (*attached)[0] + " and " +
                                               (*attached)[1] + " at once, and mounting it through both would "
                                               "damage it. Unmount and detach them (losetup -d), then start the desk.");
  }
  std::optional<AttachedLoopDevice> fresh;
  if (attached->empty()) {
    auto made = attach_loop_device(backing.get(), site.image.native());
    if (!made.ok()) return failed(made.error().error_number, made.error().what);
    fresh.emplace(std::move(made).value());
    site.loop_device = fresh->path;
  } else {
    site.loop_device = attached->front();
  }
  struct stat device_status {};
  if (::stat(site.loop_device.c_str(), &device_status) != 0) return failed(errno, "examining " + site.loop_device);
  site.image_device = device_status.st_rdev;

  auto table = read_mount_table();
  if (!table.ok()) return failed(table.error().error_number, table.error().what);
  DESKD_ASSIGN_OR_RETURN(const std::size_t image_mounted, adopt_mounts_at(*table, site.mount_point, site.image_device, "/"));
  if (image_mounted == 0) {
    if (::mount(site.loop_device.c_str(), site.mount_point.c_str(), "ext4", MS_NOSUID | MS_NODEV, "") != 0) {
      return failed(errno, "mounting " + site.loop_device + " on " + site.mount_point.native());
    }
  } else {
    DESKD_RETURN_IF_ERROR(make_nosuid_nodev(site.mount_point, site.image_device));
  }
  fresh.reset();  // the mount holds the device now; it detaches itself once that goes

  UniqueFd image_root(::open(site.mount_point.c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!image_root) return failed(errno, "opening " + site.mount_point.native());
  for (const auto& place : spec.confinement.writable_places()) {
    site.places.push_back(place.path);
    DESKD_ASSIGN_OR_RETURN(const std::size_t bound,
                           adopt_mounts_at(*table, place.path, site.image_device, "/" + place.path.filename().native()));
    if (bound == 0) {
      DESKD_RETURN_IF_ERROR(bind_place(place, site.mount_point, image_root.get(), site.image_device,
                                       spec.root_daemon_uid, spec.root_daemon_gid));
    } else {
      DESKD_RETURN_IF_ERROR(make_nosuid_nodev(place.path, site.image_device));
    }
  }
  return success();
}

// Unmounts what the mount table shows of the image on top of `path`; never follows a link
// there. A busy mount (a person's shell in notes/) is detached lazily: it leaves the table
// now and lets go of the image once its last user does.
void take_down(const std::vector<MountEntry>& table, const fs::path& path, dev_t image_device, const std::string& root,
               std::vector<std::string>& problems, bool& lazily) {
  // A lazy unmount takes every mount beneath along: never someone else's.
  const std::string beneath = path.native() + "/";
  const bool foreign_beneath = std::any_of(table.begin(), table.end(), [&](const MountEntry& entry) {
    return entry.mount_point.starts_with(beneath) && entry.device != image_device;
  });
  for (std::size_t count = mounts_on_top(table, path.native(), image_device, root); count > 0; --count) {
    if (::umount2(path.c_str(), UMOUNT_NOFOLLOW) == 0) continue;
    if (errno == EBUSY && foreign_beneath) {
      problems.push_back("unmounting " + path.native() + ": busy, and another mount lies beneath it, which a lazy "
                         "unmount would take along; left in place");
      return;
    }
    if (errno == EBUSY && ::umount2(path.c_str(), UMOUNT_NOFOLLOW | MNT_DETACH) == 0) {
      lazily = true;
      continue;
    }
    problems.push_back("unmounting " + path.native() + ": " + std::strerror(errno));
    return;
  }
}

Result<void> tear_down(const QuotaSite& site, std::chrono::milliseconds patience) {
  auto table = read_mount_table();
  if (!table.ok()) {
    return Error::make(ErrorCode::system, "The disk quota mounts of " + site.mount_point.native() +
                                              " were left in place: " + table.error().what);
  }
  std::vector<std::string> problems;
  bool lazily = false;
  for (auto place = site.places.rbegin(); place != site.places.rend(); ++place) {
    take_down(*table, *place, site.image_device, "/" + place->filename().native(), problems, lazily);
  }
  take_down(*table, site.mount_point, site.image_device, "/", problems, lazily);
  if (problems.empty() && !lazily) {
    // Waited for `patience` only: on the event loop (a reload taking a desk down), briefly. The
    // device stays attached for as long as another desk's sandbox holds a copy of the mount
    // (a desk that reads this one, a full host view): AUTOCLEAR detaches it when the last of
    // them ends, and a deskd started meanwhile adopts it, so that is not reported. A mount of
    // the image still in deskd's own table (under one someone stacked on it) is.
    auto detached = make_sure_loop_device_detached(site.loop_device, site.image.native(), site.image_status,
                                                   static_cast<int>(patience.count()));
    if (!detached.ok()) {
      auto after = read_mount_table();
      const bool ours_left = !after.ok() || std::any_of(after->begin(), after->end(), [&](const MountEntry& entry) {
        return entry.device == site.image_device;
      });
      if (ours_left) problems.push_back(detached.error().what);
    }
  }
  if (problems.empty()) return success();
  std::string text = "Taking down the disk quota mounts of " + site.mount_point.native() + " left something behind:";
  for (const auto& problem : problems) text += " " + problem + ";";
  return Error::make(ErrorCode::system, text);
}

}  // namespace

PlacesQuotaMounts& PlacesQuotaMounts::operator=(PlacesQuotaMounts&& other) noexcept {
  if (this != &other) {
    release_and_report();
    holders_ = std::move(other.holders_);
    report_ = std::move(other.report_);
  }
  return *this;
}

PlacesQuotaMounts::~PlacesQuotaMounts() { release_and_report(); }

void PlacesQuotaMounts::release_and_report() noexcept {
  auto released = release();
  if (released.ok()) return;
  if (report_) {
    report_(released.error().what);
  } else {
    std::fprintf(stderr, "deskd: %s\n", released.error().what.c_str());
  }
}

Result<void> PlacesQuotaMounts::release(std::chrono::milliseconds patience) {
  if (!holders_) return success();
  const auto holders = std::move(holders_);
  holders_.reset();
  const std::lock_guard working(holders->mutex);
  bool last = false;
  {
    const std::lock_guard counting(registry_mutex);
    last = --holders->count == 0;
  }
  if (!last || !holders->site) return success();
  auto torn = tear_down(*holders->site, patience);
  holders->site.reset();
  return torn;
}

Result<PlacesQuotaMounts> give_places_a_quota(const SandboxSpec& spec, const fs::path& folder, const DiskQuota& quota,
                                              PlacesQuotaMounts::Report report) {
  if (::geteuid() != 0) {
    return Error::make(ErrorCode::unsupported,
                       "A disk quota needs a root deskd: it mounts a file system image for each desk. Run deskd as "
                       "root, or write disk_quota_mb = \"none\" to accept a desk that can fill its file system.");
  }
  if (::mkdir(folder.c_str(), 0700) != 0 && errno != EEXIST) return failed(errno, "creating " + folder.native());
  if (::mkdir((folder / "places").c_str(), 0700) != 0 && errno != EEXIST) {
    return failed(errno, "creating " + (folder / "places").native());
  }
  // The mount table names resolved paths; deskd's own state folder may sit behind a link.
  std::error_code error;
  const fs::path resolved = fs::canonical(folder, error);
  if (error) return failed(error.value(), "resolving " + folder.native());

  std::shared_ptr<QuotaHolders> holders;
  {
    const std::lock_guard counting(registry_mutex);
    auto& slot = registry[(resolved / "places.img").native()];
    if (!slot) slot = std::make_shared<QuotaHolders>();
    holders = slot;
    ++holders->count;
  }
  PlacesQuotaMounts handle;
  handle.holders_ = holders;
  handle.report_ = std::move(report);
  const std::lock_guard working(holders->mutex);
  QuotaSite site;
  auto done = set_up(spec, resolved, quota, site);
  if (!done.ok()) {
    bool last = false;
    {
      const std::lock_guard counting(registry_mutex);
      last = --holders->count == 0;
    }
    handle.holders_.reset();
    // Nobody else holds the image: what this attempt mounted (or adopted) goes again.
    if (last && !site.loop_device.empty()) {
      if (auto torn = tear_down(site, std::chrono::milliseconds(2000)); !torn.ok()) done = Error{done.error().code, done.error().error_number,
                                                                 done.error().what + " " + torn.error().what};
      holders->site.reset();
    }
    return std::move(done).error();
  }
  if (holders->site) {
    // Another holder (a reload's successor): the places of both are taken down at the end.
    for (const auto& place : holders->site->places) {
      if (std::find(site.places.begin(), site.places.end(), place) == site.places.end()) site.places.push_back(place);
    }
  }
  holders->site = std::move(site);
  return handle;
}

}  // namespace deskd::sandbox
