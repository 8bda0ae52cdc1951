#include "sandbox/cgroup_instance.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <vector>

#include "base/random_id.h"
#include "base/unique_fd.h"
#include "sandbox/cgroup_v1.h"
#include "sandbox/host_support.h"

namespace deskd::sandbox::cgroup_instance {
namespace {

// Removes every empty cgroup below `folder`, then `folder` itself if it is empty now.
// rmdir(2) on a cgroup refuses one that holds processes or children, so nothing alive is
// ever touched.
void remove_empty_tree(const std::filesystem::path& folder) {
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator(folder, error)) {
    if (entry.is_directory(error) && !entry.is_symlink(error)) remove_empty_tree(entry.path());
  }
  ::rmdir(folder.c_str());
}

// The cgroups that killed deskd processes left behind: cgroups outlive their last process
// (v1 keeps empty ones for good). An instance folder nobody holds locked has lost its deskd.
// Folders named `sandbox-<pid>-…` come from deskd versions that put their pid in the name.
void remove_stale(const std::string& parent) {
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator(parent, error)) {
    const std::string name = entry.path().filename().native();
    if (name.rfind("instance-", 0) == 0) {
      UniqueFd folder(::open(entry.path().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
      if (folder && ::flock(folder.get(), LOCK_EX | LOCK_NB) == 0) remove_empty_tree(entry.path());
    } else if (name.rfind("sandbox-", 0) == 0) {
      const pid_t owner = static_cast<pid_t>(std::atol(name.c_str() + 8));
      if (owner > 0 && ::kill(owner, 0) != 0 && errno == ESRCH) ::rmdir(entry.path().c_str());
    }
  }
}

struct Instance {
  std::string path;
  UniqueFd lock;  // flock'ed for the life of this process
};

// A new instance folder under `parent`, locked. A deskd starting at the same moment may be
// cleaning `parent`: it can take a folder between our mkdir and our flock and remove it,
// so a folder is ours only once locked and still there.
Result<Instance> make_instance(const std::string& parent) {
  int last_error = 0;
  for (int attempt = 0; attempt < 4; ++attempt) {
    Instance instance{parent + "/instance-" + random_hex(8), UniqueFd()};
    if (::mkdir(instance.path.c_str(), 0755) != 0) {
      last_error = errno;
      continue;
    }
    instance.lock.reset(::open(instance.path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    struct stat opened {
    }, named{};
    if (instance.lock && ::flock(instance.lock.get(), LOCK_EX | LOCK_NB) == 0 &&
        ::fstat(instance.lock.get(), &opened) == 0 && ::stat(instance.path.c_str(), &named) == 0 &&
        opened.st_ino == named.st_ino) {
      return instance;
    }
    last_error = errno;
  }
  return Error::from_errno(last_error, "Creating deskd's cgroup folder under " + parent + " failed");
}

// Lets the children of `folder` have the controllers: their counters (memory.events,
// pids.events) exist only then. cpu only where it is offered.
Result<void> enable_controllers(const std::string& folder) {
  for (const char* controller : {"+memory", "+pids"}) {
    DESKD_RETURN_IF_ERROR(write_file(folder + "/cgroup.subtree_control", controller));
  }
  (void)write_file(folder + "/cgroup.subtree_control", "+cpu");  // cpu is optional
  return success();
}

// cgroup v2 lets a cgroup either hold processes or hand controllers to its children, not
// both. deskd therefore moves itself into a leaf "deskd" of its delegated folder, then
// enables memory, pids and cpu for the folder's children: the instance folders.
Result<std::string> prepare_delegated(const std::string& directory) {
  const std::string leaf = directory + "/deskd";
  if (::mkdir(leaf.c_str(), 0755) != 0 && errno != EEXIST) {
    return Error::from_errno(errno, "Creating deskd's own cgroup " + leaf + " failed");
  }
  DESKD_RETURN_IF_ERROR(write_file(leaf + "/cgroup.procs", "0"));
  DESKD_RETURN_IF_ERROR(enable_controllers(directory));
  return directory;
}

// Holds the instance folders (and their locks) for the life of the process; at a normal
// exit removes them if empty. A killed deskd's are removed by the next one (remove_stale).
struct Held {
  Parents parents;
  std::vector<Instance> instances;
  Held() = default;
  Held(Held&&) noexcept = default;
  Held& operator=(Held&&) noexcept = default;
  ~Held() {
    for (const auto& instance : instances) ::rmdir(instance.path.c_str());
  }
};

Result<std::optional<Held>> make_parents() {
  Held held;
  if (const auto directory = delegated_cgroup_directory()) {
    DESKD_ASSIGN_OR_RETURN(const std::string parent, prepare_delegated(*directory));
    remove_stale(parent);
    DESKD_ASSIGN_OR_RETURN(Instance instance, make_instance(parent));
    DESKD_RETURN_IF_ERROR(enable_controllers(instance.path));
    held.parents.version2 = true;
    held.parents.unified = instance.path;
    held.instances.push_back(std::move(instance));
    return std::optional<Held>(std::move(held));
  }
  const auto memory = cgroup_v1::own_folder("memory");
  const auto pids = cgroup_v1::own_folder("pids");
  if (!memory || !pids) return std::optional<Held>();
  const auto cpu = cgroup_v1::own_folder("cpu");
  held.parents.version2 = false;
  for (const auto& [parent, target] :
       {std::pair{&*memory, &held.parents.memory}, std::pair{&*pids, &held.parents.pids}}) {
    remove_stale(*parent);
    DESKD_ASSIGN_OR_RETURN(Instance instance, make_instance(*parent));
    *target = instance.path;
    held.instances.push_back(std::move(instance));
  }
  if (cpu) {
    remove_stale(*cpu);
    if (auto instance = make_instance(*cpu); instance.ok()) {
      held.parents.cpu = instance->path;
      held.instances.push_back(std::move(instance).value());
    }
  }
  return std::optional<Held>(std::move(held));
}

// The v1 folders a single-use sandbox is made in: deskd's own in each hierarchy it needs.
Result<std::optional<std::vector<std::string>>> single_use_parents_v1(bool with_cpu) {
  const auto memory = cgroup_v1::own_folder("memory");
  const auto pids = cgroup_v1::own_folder("pids");
  if (!memory || !pids) return std::optional<std::vector<std::string>>();
  std::vector<std::string> parents{*memory, *pids};
  if (with_cpu) {
    const auto cpu = cgroup_v1::own_folder("cpu");
    if (!cpu) {
      return Error::make(ErrorCode::unsupported,
                         "A CPU limit was asked for, but this host's cgroup v1 has no cpu hierarchy deskd can use.");
    }
    parents.push_back(*cpu);
  }
  return std::optional<std::vector<std::string>>(std::move(parents));
}

}  // namespace

Result<std::optional<SingleUseFolders>> make_single_use(bool with_cpu) {
  SingleUseFolders made;
  std::vector<std::string> parents;
  if (const auto directory = delegated_cgroup_directory()) {
    DESKD_ASSIGN_OR_RETURN(const std::string parent, prepare_delegated(*directory));
    parents.push_back(parent);
  } else {
    DESKD_ASSIGN_OR_RETURN(auto v1_parents, single_use_parents_v1(with_cpu));
    if (!v1_parents) return std::optional<SingleUseFolders>();
    made.version2 = false;
    parents = std::move(*v1_parents);
  }
  for (const auto& parent : parents) {
    remove_stale(parent);
    auto instance = make_instance(parent);
    if (!instance.ok()) {
      for (const auto& folder : made.folders) ::rmdir(folder.c_str());
      return instance.error();
    }
    made.folders.push_back(std::move(instance->path));
    made.locks.push_back(std::move(instance->lock));
  }
  return std::optional<SingleUseFolders>(std::move(made));
}

Result<void> write_file(const std::string& path, const std::string& text) {
  UniqueFd fd(::open(path.c_str(), O_WRONLY | O_CLOEXEC));
  if (!fd) return Error::from_errno(errno, "Opening " + path + " failed");
  if (retry_on_eintr([&] { return ::write(fd.get(), text.data(), text.size()); }) !=
      static_cast<ssize_t>(text.size())) {
    return Error::from_errno(errno, "Writing '" + text + "' to " + path + " failed");
  }
  return success();
}

// Looked up once per process, found or not: a daemon on a host without cgroups otherwise
// read /proc/self/mountinfo, /proc/self/cgroup and cgroup.controllers again for every launch.
Result<const Parents*> parents() {
  static std::mutex mutex;
  static std::optional<Held> held;
  static bool looked = false;
  std::lock_guard lock(mutex);
  if (!looked) {
    DESKD_ASSIGN_OR_RETURN(held, make_parents());
    looked = true;
  }
  return held ? &held->parents : nullptr;
}

std::optional<Kind> kind() {
  if (delegated_cgroup_directory()) return Kind{true, false};
  if (!cgroup_v1::own_folder("memory") || !cgroup_v1::own_folder("pids")) return std::nullopt;
  return Kind{false, cgroup_v1::own_folder("cpu").has_value()};
}

}  // namespace deskd::sandbox::cgroup_instance
