#include "sandbox/cgroup_limits.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <string_view>

#include "base/random_id.h"
#include "sandbox/cgroup_instance.h"
#include "sandbox/host_support.h"
#include "sandbox/memory_pinning_filter.h"

namespace deskd::sandbox {
namespace {

using cgroup_instance::write_file;

bool exists(const std::string& path) { return ::access(path.c_str(), F_OK) == 0; }

// A name no other cgroup has, and that says nothing about the host: a v1 sandbox sees its
// cgroup's path in /proc/self/cgroup.
std::string random_name(const char* kind) { return std::string(kind) + "-" + random_hex(8); }

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

// Makes `folders` (in order), or none of them.
Result<void> make_folders(const std::vector<std::string>& folders) {
  std::vector<std::string> made;
  for (const auto& folder : folders) {
    if (::mkdir(folder.c_str(), 0755) != 0) {
      const int error_number = errno;
      for (const auto& done : made) ::rmdir(done.c_str());
      return Error::from_errno(error_number, "Creating the cgroup " + folder + " failed");
    }
    made.push_back(folder);
  }
  return success();
}

// Removes `folders`; their processes, killed just before, leave once reaped, which takes a
// moment.
void remove_folders(const std::vector<std::string>& folders) {
  for (const auto& folder : folders) {
    for (int attempt = 0; attempt < 200 && ::rmdir(folder.c_str()) != 0 && errno == EBUSY; ++attempt) {
      ::usleep(1000);
    }
  }
}

// The CPU limit's period and the quota in it, in microseconds, as both cgroup versions take
// them. Rounded by hand: std::lround was the one libm function the lean deskd used, and
// loading libm cost every `deskd sandbox` a library (cpus is at least kMinimumCpus > 0).
constexpr long kCpuPeriod = 100000;
long cpu_quota(double cpus) { return static_cast<long>(cpus * kCpuPeriod + 0.5); }

// The desk's limits, in its v1 folders: memory, pids, then cpu when it has a CPU limit.
Result<void> limit_desk_version1(const std::vector<std::string>& folders, const ResourceLimits& limits) {
  const std::string& memory = folders[0];
  DESKD_RETURN_IF_ERROR(write_file(folders[1] + "/pids.max", std::to_string(limits.processes)));
  if (limits.memory_bytes) {
    DESKD_RETURN_IF_ERROR(write_file(memory + "/memory.limit_in_bytes", std::to_string(*limits.memory_bytes)));
    // memory and swap together: a hog must be stopped, not pushed into swap.
    if (exists(memory + "/memory.memsw.limit_in_bytes")) {
      DESKD_RETURN_IF_ERROR(write_file(memory + "/memory.memsw.limit_in_bytes", std::to_string(*limits.memory_bytes)));
    }
  }
  if (limits.cpus) {
    DESKD_RETURN_IF_ERROR(write_file(folders[2] + "/cpu.cfs_period_us", std::to_string(kCpuPeriod)));
    DESKD_RETURN_IF_ERROR(write_file(folders[2] + "/cpu.cfs_quota_us", std::to_string(cpu_quota(*limits.cpus))));
  }
  return success();
}

// Under a root deskd on a hybrid host: one desk folder per hierarchy, the same name in each.
Result<std::shared_ptr<DeskCgroup>> create_desk_version1(const cgroup_instance::Parents& parents,
                                                         const ResourceLimits& limits) {
  if (limits.cpus && !parents.cpu) {
    return Error::make(ErrorCode::unsupported,
                       "A CPU limit was asked for, but this host's cgroup v1 has no cpu hierarchy deskd can use.");
  }
  const std::string name = random_name("desk");
  std::vector<std::string> folders{parents.memory + "/" + name, parents.pids + "/" + name};
  if (limits.cpus) folders.push_back(*parents.cpu + "/" + name);
  DESKD_RETURN_IF_ERROR(make_folders(folders));
  auto desk = std::make_shared<DeskCgroup>(CgroupVersion::one, folders);
  DESKD_RETURN_IF_ERROR(limit_desk_version1(folders, limits));
  return desk;
}

// The desk's limits, in its v2 folder.
Result<void> limit_desk_version2(const std::string& path, const ResourceLimits& limits) {
  DESKD_RETURN_IF_ERROR(write_file(path + "/pids.max", std::to_string(limits.processes)));
  if (limits.memory_bytes) {
    DESKD_RETURN_IF_ERROR(write_file(path + "/memory.max", std::to_string(*limits.memory_bytes)));
    // Without this, a memory hog would push the host into swap instead of being stopped.
    if (exists(path + "/memory.swap.max")) DESKD_RETURN_IF_ERROR(write_file(path + "/memory.swap.max", "0"));
  }
  if (limits.cpus) {
    if (!exists(path + "/cpu.max")) {
      return Error::make(ErrorCode::unsupported,
                         "A CPU limit was asked for, but the cpu controller is not delegated to " +
                             path.substr(0, path.rfind('/')) + ".");
    }
    DESKD_RETURN_IF_ERROR(
        write_file(path + "/cpu.max", std::to_string(cpu_quota(*limits.cpus)) + " " + std::to_string(kCpuPeriod)));
  }
  return success();
}

Result<std::shared_ptr<DeskCgroup>> create_desk_version2(const std::string& parent, const ResourceLimits& limits) {
  const std::string path = parent + "/" + random_name("desk");
  DESKD_RETURN_IF_ERROR(make_folders({path}));
  auto desk = std::make_shared<DeskCgroup>(CgroupVersion::two, std::vector<std::string>{path});
  DESKD_RETURN_IF_ERROR(limit_desk_version2(path, limits));
  // The sandboxes' own cgroups need the controllers for their counters (memory.events,
  // pids.events); they get no limits of their own.
  for (const char* controller : {"+memory", "+pids"}) {
    DESKD_RETURN_IF_ERROR(write_file(path + "/cgroup.subtree_control", controller));
  }
  return desk;
}

// A desk of one sandbox (DeskCgroupSlot::Use::one_sandbox): the instance folders made for
// it carry the limits and hold the sandbox itself.
Result<std::shared_ptr<DeskCgroup>> create_single_use_desk(const ResourceLimits& limits) {
  DESKD_ASSIGN_OR_RETURN(auto made, cgroup_instance::make_single_use(limits.cpus.has_value()));
  if (!made) return std::shared_ptr<DeskCgroup>();
  const CgroupVersion version = made->version2 ? CgroupVersion::two : CgroupVersion::one;
  auto desk = std::make_shared<DeskCgroup>(version, made->folders, std::move(made->locks));
  DESKD_RETURN_IF_ERROR(version == CgroupVersion::two ? limit_desk_version2(made->folders[0], limits)
                                                      : limit_desk_version1(made->folders, limits));
  return desk;
}

// A sandbox's cgroup: a folder of a random name inside each of the desk's folders; for a
// desk of one sandbox, the desk's folders themselves.
Result<std::optional<SandboxCgroup>> create_in_desk(std::shared_ptr<DeskCgroup> desk, DeskCgroupSlot::Use use) {
  const bool is_desk = use == DeskCgroupSlot::Use::one_sandbox;
  if (is_desk && desk.use_count() > 1) {
    return Error::make(ErrorCode::internal,
                       "A desk cgroup made for one sandbox was asked for a second while the first still runs.");
  }
  std::vector<std::string> folders;
  if (!is_desk) {
    const std::string name = random_name("sandbox");
    for (const auto& desk_folder : desk->folders()) folders.push_back(desk_folder + "/" + name);
    DESKD_RETURN_IF_ERROR(make_folders(folders));
  }
  UniqueFd directory;
  if (desk->version() == CgroupVersion::two) {
    const std::string& folder = is_desk ? desk->folders()[0] : folders[0];
    directory.reset(::open(folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!directory) {
      const int error_number = errno;
      if (!is_desk) ::rmdir(folder.c_str());
      return Error::from_errno(error_number, "Opening the cgroup " + folder + " failed");
    }
  }
  return std::optional<SandboxCgroup>(SandboxCgroup(std::move(desk), std::move(folders), std::move(directory)));
}

}  // namespace

DeskCgroup::~DeskCgroup() {
  process_counter_.reset();
  remove_folders(folders_);
}

std::uint64_t DeskCgroup::process_limit_hits() const {
  std::lock_guard lock(mutex_);
  return keyed_counter(process_counter_, folders_[version_ == CgroupVersion::two ? 0 : 1] + "/pids.events", "max");
}

Result<std::shared_ptr<DeskCgroup>> DeskCgroupSlot::acquire(const ResourceLimits& limits) {
  std::lock_guard lock(mutex_);
  if (auto desk = current_.lock()) return desk;
  if (use_ == Use::one_sandbox) {
    DESKD_ASSIGN_OR_RETURN(std::shared_ptr<DeskCgroup> desk, create_single_use_desk(limits));
    current_ = desk;
    return desk;
  }
  DESKD_ASSIGN_OR_RETURN(const cgroup_instance::Parents* parents, cgroup_instance::parents());
  if (parents == nullptr) return std::shared_ptr<DeskCgroup>();
  DESKD_ASSIGN_OR_RETURN(std::shared_ptr<DeskCgroup> desk, parents->version2
                                                               ? create_desk_version2(parents->unified, limits)
                                                               : create_desk_version1(*parents, limits));
  current_ = desk;
  return desk;
}

SandboxCgroup& SandboxCgroup::operator=(SandboxCgroup&& other) noexcept {
  if (this != &other) {
    destroy();
    desk_ = std::move(other.desk_);
    is_desk_ = other.is_desk_;
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

std::optional<std::uint64_t> SandboxCgroup::tasks() const {
  const bool two = version() == CgroupVersion::two;
  if (folders_.size() < (two ? 1u : 2u)) return std::nullopt;  // v1: [memory, pids]
  UniqueFd file(::open((folders_[two ? 0 : 1] + "/pids.current").c_str(), O_RDONLY | O_CLOEXEC));
  if (!file) return std::nullopt;
  char text[32] = {};
  const ssize_t got = ::read(file.get(), text, sizeof text - 1);
  if (got <= 0 || text[0] < '0' || text[0] > '9') return std::nullopt;
  return std::strtoull(text, nullptr, 10);
}

LimitHits SandboxCgroup::limit_hits() const {
  LimitHits hits;
  if (folders_.empty()) return hits;
  // Whichever of the sandbox's and the desk's counters this kernel keeps (see
  // DeskCgroup::process_limit_hits); the other stays 0.
  if (version() == Version::two) {
    hits.process_limit = keyed_counter(process_counter_, folders_[0] + "/pids.events", "max");
    hits.memory_kills = keyed_counter(memory_counter_, folders_[0] + "/memory.events", "oom_kill");
  } else {
    hits.memory_kills = keyed_counter(memory_counter_, folders_[0] + "/memory.oom_control", "oom_kill");
    hits.process_limit = keyed_counter(process_counter_, folders_[1] + "/pids.events", "max");
  }
  if (!is_desk_) hits.process_limit += desk_->process_limit_hits();
  return hits;
}

void SandboxCgroup::kill_all() {
  if (folders_.empty()) return;
  if (version() == Version::two && write_file(folders_[0] + "/cgroup.kill", "1").ok()) return;
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
  if (!is_desk_) remove_folders(folders_);
  folders_.clear();
  desk_.reset();  // the desk's cgroup goes with its last sandbox
}

Result<std::optional<SandboxCgroup>> create_sandbox_cgroup(DeskCgroupSlot& desk, const ResourceLimits& limits) {
  DESKD_ASSIGN_OR_RETURN(std::shared_ptr<DeskCgroup> desk_cgroup, desk.acquire(limits));
  if (!desk_cgroup) return std::optional<SandboxCgroup>();
  return create_in_desk(std::move(desk_cgroup), desk.use());
}

SupportCheck check_desk_limits() {
  SupportCheck check;
  check.name = "per-desk limits";
  check.available = true;
  if (delegated_cgroup_directory()) {
    check.detail = "cgroup v2: memory, processes and CPU for each desk as a whole";
  } else if (const auto found = cgroup_instance::kind()) {
    // No favordynmods hint any more: a sandbox joins its v1 cgroup through `tasks`, a move
    // that never waits for the kernel's RCU grace period (launcher.cpp, open_cgroup_joins)
    // on any kernel that has favordynmods (6.2 and later).
    check.detail = std::string("cgroup v1 (deskd is root on a hybrid host): memory and processes") +
                   (found->cpu ? " and CPU" : "") + " for each desk as a whole";
  } else {
    check.available = false;
    check.detail = std::string(
                       "rlimits only, so memory is limited per process, not per desk: each process may map "
                       "the desk's memory limit (RLIMIT_AS), and a desk's processes together may hold more; "
                       "each sandbox's /tmp and /dev/shm hold at most half the limit each; ") +
                   memory_pinning_calls() +
                   " are refused (what they hold escapes RLIMIT_AS); pipe and socket buffers are not counted; "
                   "processes are counted per uid (RLIMIT_NPROC); no CPU limit";
    check.fix = "give deskd a delegated cgroup v2 subtree (systemd: Delegate=yes), or run it as root";
  }
  return check;
}

}  // namespace deskd::sandbox
