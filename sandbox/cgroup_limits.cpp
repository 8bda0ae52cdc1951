#include "sandbox/cgroup_limits.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cmath>
#include <fstream>
#include <mutex>

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
Result<std::string> prepared_parent() {
  static std::mutex mutex;
  static std::optional<std::string> parent;
  std::lock_guard lock(mutex);
  if (parent) return *parent;
  const auto directory = delegated_cgroup_directory();
  if (!directory) return std::string();
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

}  // namespace

SandboxCgroup& SandboxCgroup::operator=(SandboxCgroup&& other) noexcept {
  if (this != &other) {
    destroy();
    path_ = std::move(other.path_);
    directory_ = std::move(other.directory_);
  }
  return *this;
}

SandboxCgroup::~SandboxCgroup() { destroy(); }

void SandboxCgroup::kill_all() {
  if (path_.empty()) return;
  if (write_file(path_ + "/cgroup.kill", "1").ok()) return;
  // Before Linux 5.14: kill each process listed, until none is left.
  for (int round = 0; round < 100; ++round) {
    std::ifstream procs(path_ + "/cgroup.procs");
    bool any = false;
    for (pid_t pid = 0; procs >> pid;) {
      ::kill(pid, SIGKILL);
      any = true;
    }
    if (!any) return;
    ::usleep(1000);
  }
}

void SandboxCgroup::destroy() {
  if (path_.empty()) return;
  kill_all();
  directory_.reset();
  // The killed processes leave the cgroup once they are reaped, which takes a moment.
  for (int attempt = 0; attempt < 200 && ::rmdir(path_.c_str()) != 0 && errno == EBUSY; ++attempt) {
    ::usleep(1000);
  }
  path_.clear();
}

Result<std::optional<SandboxCgroup>> create_sandbox_cgroup(const ResourceLimits& limits) {
  DESKD_ASSIGN_OR_RETURN(const std::string parent, prepared_parent());
  if (parent.empty()) return std::optional<SandboxCgroup>();
  const std::string path = parent + "/sandbox-" + std::to_string(::getpid()) + "-" +
                           std::to_string(sandbox_counter.fetch_add(1) + 1);
  if (::mkdir(path.c_str(), 0755) != 0) return Error::from_errno(errno, "Creating the cgroup " + path + " failed");
  UniqueFd directory(::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!directory) {
    const int error_number = errno;
    ::rmdir(path.c_str());
    return Error::from_errno(error_number, "Opening the cgroup " + path + " failed");
  }
  SandboxCgroup cgroup(path, std::move(directory));
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

}  // namespace deskd::sandbox
