#include "sandbox/cgroup_limits.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <string_view>

#include "base/random_id.h"
#include "sandbox/cgroup_v1.h"
#include "sandbox/host_support.h"

namespace deskd::sandbox {
namespace {

Result<void> write_file(const std::string& path, const std::string& text) {
  UniqueFd fd(::open(path.c_str(), O_WRONLY | O_CLOEXEC));
  if (!fd) return Error::from_errno(errno, "Opening " + path + " failed");
  if (retry_on_eintr([&] { return ::write(fd.get(), text.data(), text.size()); }) !=
      static_cast<ssize_t>(text.size())) {
    return Error::from_errno(errno, "Writing '" + text + "' to " + path + " failed");
  }
  return success();
}

bool exists(const std::string& path) { return ::access(path.c_str(), F_OK) == 0; }

// cgroup v2 lets a cgroup either hold processes or hand controllers to its children, not
// both. deskd therefore moves itself into a leaf "deskd" of its delegated folder once,
// then enables memory, pids and cpu for the folder's children: the sandboxes.
// Looked up once per process, found or not ("" for none), as version1_folders() is: a
// daemon on a host without delegation otherwise read /proc/self/mountinfo, /proc/self/cgroup
// and cgroup.controllers again for every launch.
Result<std::string> prepared_parent() {
  static std::mutex mutex;
  static std::optional<std::string> parent;
  std::lock_guard lock(mutex);
  if (parent) return *parent;
  const auto directory = delegated_cgroup_directory();
  if (!directory) {
    parent = std::string();
    return *parent;
  }
  const std::string leaf = *directory + "/deskd";
  if (::mkdir(leaf.c_str(), 0755) != 0 && errno != EEXIST) {
    return Error::from_errno(errno, "Creating deskd's own cgroup " + leaf + " failed");
  }
  DESKD_RETURN_IF_ERROR(write_file(leaf + "/cgroup.procs", "0"));
  for (const char* controller : {"+memory", "+pids"}) {
    DESKD_RETURN_IF_ERROR(write_file(*directory + "/cgroup.subtree_control", controller));
  }
  (void)write_file(*directory + "/cgroup.subtree_control", "+cpu");  // cpu is optional
  parent = *directory;
  return *parent;
}

std::atomic<unsigned> sandbox_counter{0};

// A name no other sandbox has: a deskd killed with SIGKILL leaves its (empty) cgroups
// behind, and a later deskd may get the same pid; the random part keeps them apart.
std::string sandbox_name() {
  return "sandbox-" + std::to_string(::getpid()) + "-" + std::to_string(sandbox_counter.fetch_add(1) + 1) + "-" +
         random_hex(4);
}

// A counter from a flat keyed file ("max 3", "oom_kill 1"); 0 when absent.
// The value of `key` in a cgroup counter file ("max 3\noom_kill 0\n"), read with one
// pread(2) from offset 0 (the kernel renders the file afresh) of a descriptor kept open, into a
// stack buffer: a desk's bash asks before and after every command, so this is on the warm
// round trip. The descriptor is opened at the first call; 0 when it cannot be.
std::uint64_t keyed_counter(UniqueFd& fd, const std::string& path, const std::string& key) {
  if (!fd) fd.reset(retry_on_eintr([&] { return ::open(path.c_str(), O_RDONLY | O_CLOEXEC); }));
  if (!fd) return 0;
  char buffer[1024];
  const ssize_t count = retry_on_eintr([&] { return ::pread(fd.get(), buffer, sizeof buffer, 0); });
  if (count <= 0) return 0;
  const std::string_view text(buffer, static_cast<std::size_t>(count));
  for (std::size_t start = 0; start < text.size();) {
    std::size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view line = text.substr(start, end - start);
    start = end + 1;
    if (line.size() <= key.size() || line.compare(0, key.size(), key) != 0 || line[key.size()] != ' ') continue;
    std::uint64_t value = 0;
    for (const char digit : line.substr(key.size() + 1)) {
      if (digit < '0' || digit > '9') break;
      value = value * 10 + static_cast<std::uint64_t>(digit - '0');
    }
    return value;
  }
  return 0;
}

// The v1 folders deskd may make sandbox cgroups in: memory and pids are needed (the
// limits are the point), cpu is used when there.
struct Version1Folders {
  std::string memory, pids;
  std::optional<std::string> cpu;
};

// The sandbox cgroups a killed deskd left behind (its pid, in their names, is gone): v1 keeps
// empty cgroups for good. rmdir takes only empty ones, so a live sandbox is never touched.
void remove_stale_sandboxes(const std::string& parent) {
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator(parent, error)) {
    const std::string name = entry.path().filename().native();
    if (name.rfind("sandbox-", 0) != 0) continue;
    const pid_t owner = static_cast<pid_t>(std::atol(name.c_str() + 8));
    if (owner > 0 && ::kill(owner, 0) != 0 && errno == ESRCH) ::rmdir(entry.path().c_str());
  }
}

std::optional<Version1Folders> version1_folders() {
  static const std::optional<Version1Folders> folders = []() -> std::optional<Version1Folders> {
    if (delegated_cgroup_directory()) return std::nullopt;  // v2 first
    auto memory = cgroup_v1::own_folder("memory");
    auto pids = cgroup_v1::own_folder("pids");
    if (!memory || !pids) return std::nullopt;
    auto cpu = cgroup_v1::own_folder("cpu");
    for (const auto* parent : {&*memory, &*pids}) remove_stale_sandboxes(*parent);
    if (cpu) remove_stale_sandboxes(*cpu);
    return Version1Folders{*memory, *pids, cpu};
  }();
  return folders;
}

Result<void> write_cpu_quota(const std::string& quota_file, const std::string& period_file, double cpus) {
  constexpr long kPeriod = 100000;
  DESKD_RETURN_IF_ERROR(write_file(period_file, std::to_string(kPeriod)));
  return write_file(quota_file, std::to_string(std::lround(cpus * kPeriod)));
}

// Under a root deskd on a hybrid host: one folder per hierarchy, the same name in each.
Result<std::optional<SandboxCgroup>> create_version1(const Version1Folders& parents, const ResourceLimits& limits) {
  if (limits.cpus && !parents.cpu) {
    return Error::make(ErrorCode::unsupported,
                       "A CPU limit was asked for, but this host's cgroup v1 has no cpu hierarchy deskd can use.");
  }
  const std::string name = sandbox_name();
  std::vector<std::string> folders;
  for (const std::string* parent : {&parents.memory, &parents.pids}) folders.push_back(*parent + "/" + name);
  if (limits.cpus) folders.push_back(*parents.cpu + "/" + name);
  std::vector<std::string> made;
  for (const auto& folder : folders) {
    if (::mkdir(folder.c_str(), 0755) != 0) {
      const int error_number = errno;
      for (const auto& done : made) ::rmdir(done.c_str());
      return Error::from_errno(error_number, "Creating the cgroup " + folder + " failed");
    }
    made.push_back(folder);
  }
  SandboxCgroup cgroup(SandboxCgroup::Version::one, folders, UniqueFd());
  const std::string& memory = folders[0];
  const std::string& pids = folders[1];
  DESKD_RETURN_IF_ERROR(write_file(pids + "/pids.max", std::to_string(limits.processes)));
  if (limits.memory_bytes) {
    DESKD_RETURN_IF_ERROR(write_file(memory + "/memory.limit_in_bytes", std::to_string(*limits.memory_bytes)));
    // memory and swap together: a hog must be stopped, not pushed into swap.
    if (exists(memory + "/memory.memsw.limit_in_bytes")) {
      DESKD_RETURN_IF_ERROR(write_file(memory + "/memory.memsw.limit_in_bytes", std::to_string(*limits.memory_bytes)));
    }
  }
  if (limits.cpus) {
    DESKD_RETURN_IF_ERROR(write_cpu_quota(folders[2] + "/cpu.cfs_quota_us", folders[2] + "/cpu.cfs_period_us", *limits.cpus));
  }
  return std::optional<SandboxCgroup>(std::move(cgroup));
}

Result<std::optional<SandboxCgroup>> create_version2(const std::string& parent, const ResourceLimits& limits) {
  const std::string path = parent + "/" + sandbox_name();
  if (::mkdir(path.c_str(), 0755) != 0) return Error::from_errno(errno, "Creating the cgroup " + path + " failed");
  UniqueFd directory(::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!directory) {
    const int error_number = errno;
    ::rmdir(path.c_str());
    return Error::from_errno(error_number, "Opening the cgroup " + path + " failed");
  }
  SandboxCgroup cgroup(SandboxCgroup::Version::two, {path}, std::move(directory));
  DESKD_RETURN_IF_ERROR(write_file(path + "/pids.max", std::to_string(limits.processes)));
  if (limits.memory_bytes) {
    DESKD_RETURN_IF_ERROR(write_file(path + "/memory.max", std::to_string(*limits.memory_bytes)));
    // Without this, a memory hog would push the host into swap instead of being stopped.
    if (exists(path + "/memory.swap.max")) DESKD_RETURN_IF_ERROR(write_file(path + "/memory.swap.max", "0"));
  }
  if (limits.cpus) {
    if (!exists(path + "/cpu.max")) {
      return Error::make(ErrorCode::unsupported,
                         "A CPU limit was asked for, but the cpu controller is not delegated to " + parent + ".");
    }
    constexpr long kPeriod = 100000;
    const long quota = std::lround(*limits.cpus * kPeriod);
    DESKD_RETURN_IF_ERROR(write_file(path + "/cpu.max", std::to_string(quota) + " " + std::to_string(kPeriod)));
  }
  return std::optional<SandboxCgroup>(std::move(cgroup));
}

}  // namespace

SandboxCgroup& SandboxCgroup::operator=(SandboxCgroup&& other) noexcept {
  if (this != &other) {
    destroy();
    version_ = other.version_;
    folders_ = std::move(other.folders_);
    directory_ = std::move(other.directory_);
    process_counter_ = std::move(other.process_counter_);
    memory_counter_ = std::move(other.memory_counter_);
  }
  return *this;
}

SandboxCgroup::~SandboxCgroup() { destroy(); }

std::vector<std::string> SandboxCgroup::procs_files() const {
  std::vector<std::string> files;
  for (const auto& folder : folders_) files.push_back(folder + "/cgroup.procs");
  return files;
}

LimitHits SandboxCgroup::limit_hits() const {
  LimitHits hits;
  if (folders_.empty()) return hits;
  if (version_ == Version::two) {
    hits.process_limit = keyed_counter(process_counter_, folders_[0] + "/pids.events", "max");
    hits.memory_kills = keyed_counter(memory_counter_, folders_[0] + "/memory.events", "oom_kill");
  } else {
    hits.memory_kills = keyed_counter(memory_counter_, folders_[0] + "/memory.oom_control", "oom_kill");
    hits.process_limit = keyed_counter(process_counter_, folders_[1] + "/pids.events", "max");
  }
  return hits;
}

void SandboxCgroup::kill_all() {
  if (folders_.empty()) return;
  if (version_ == Version::two && write_file(folders_[0] + "/cgroup.kill", "1").ok()) return;
  // cgroup v1, or v2 before Linux 5.14: kill each process listed, until none is left.
  for (int round = 0; round < 100; ++round) {
    bool any = false;
    for (const auto& procs_file : procs_files()) {
      std::ifstream procs(procs_file);
      for (pid_t pid = 0; procs >> pid;) {
        ::kill(pid, SIGKILL);
        any = true;
      }
    }
    if (!any) return;
    ::usleep(1000);
  }
}

void SandboxCgroup::destroy() {
  if (folders_.empty()) return;
  kill_all();
  directory_.reset();
  process_counter_.reset();
  memory_counter_.reset();
  // The killed processes leave the cgroup once they are reaped, which takes a moment.
  for (const auto& folder : folders_) {
    for (int attempt = 0; attempt < 200 && ::rmdir(folder.c_str()) != 0 && errno == EBUSY; ++attempt) {
      ::usleep(1000);
    }
  }
  folders_.clear();
}

Result<std::optional<SandboxCgroup>> create_sandbox_cgroup(const ResourceLimits& limits) {
  DESKD_ASSIGN_OR_RETURN(const std::string parent, prepared_parent());
  if (!parent.empty()) return create_version2(parent, limits);
  if (const auto folders = version1_folders()) return create_version1(*folders, limits);
  return std::optional<SandboxCgroup>();
}

namespace {

// The cgroup2 mount point, and whether any cgroup hierarchy is mounted with favordynmods:
// with it the kernel keeps cgroup_threadgroup_rwsem ready for writers, and moving a
// process into a v1 cgroup no longer waits for an RCU grace period (forks pay a little).
struct DynmodsState {
  std::string cgroup2_mount;
  bool favoured = false;
};

DynmodsState dynmods_state() {
  DynmodsState state;
  std::ifstream mounts("/proc/self/mounts");
  std::string source, target, type, options, rest;
  while (mounts >> source >> target >> type >> options && std::getline(mounts, rest)) {
    if (type != "cgroup" && type != "cgroup2") continue;
    if (type == "cgroup2" && state.cgroup2_mount.empty()) state.cgroup2_mount = target;
    if (("," + options + ",").find(",favordynmods,") != std::string::npos) state.favoured = true;
  }
  return state;
}

}  // namespace

SupportCheck check_desk_limits() {
  SupportCheck check;
  check.name = "per-desk limits";
  check.available = true;
  if (delegated_cgroup_directory()) {
    check.detail = "cgroup v2: memory, processes and CPU for each desk as a whole";
  } else if (const auto folders = version1_folders()) {
    check.detail = std::string("cgroup v1 (deskd is root on a hybrid host): memory and processes") +
                   (folders->cpu ? " and CPU" : "") + " for each desk as a whole";
    const DynmodsState dynmods = dynmods_state();
    if (!dynmods.favoured && !dynmods.cgroup2_mount.empty()) {
      check.detail += "; each sandbox's move into its cgroup may wait ~10 ms for the kernel (an RCU grace "
                      "period), which `mount -o remount,favordynmods " +
                      dynmods.cgroup2_mount + "` removes at a small cost to every fork";
    }
  } else {
    check.available = false;
    check.detail = "rlimits only: memory per process (RLIMIT_AS), processes per uid, no CPU limit";
    check.fix = "give deskd a delegated cgroup v2 subtree (systemd: Delegate=yes), or run it as root";
  }
  return check;
}

}  // namespace deskd::sandbox
