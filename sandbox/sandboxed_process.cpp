#include "sandbox/sandboxed_process.h"

#include <dirent.h>
#include <poll.h>
#include <sys/stat.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <fstream>
#include <map>
#include <string>
#include <vector>
#include <utility>

namespace deskd::sandbox {

SandboxedProcess::SandboxedProcess(SandboxedProcess&& other) noexcept
    : pid_(std::exchange(other.pid_, -1)),
      pidfd_(std::move(other.pidfd_)),
      cgroup_(std::move(other.cgroup_)),
      exit_status_(other.exit_status_),
      final_hits_(other.final_hits_) {}

SandboxedProcess& SandboxedProcess::operator=(SandboxedProcess&& other) noexcept {
  if (this != &other) {
    close();
    pid_ = std::exchange(other.pid_, -1);
    pidfd_ = std::move(other.pidfd_);
    cgroup_ = std::move(other.cgroup_);
    exit_status_ = other.exit_status_;
    final_hits_ = other.final_hits_;
  }
  return *this;
}

SandboxedProcess::~SandboxedProcess() { close(); }

Result<std::optional<int>> SandboxedProcess::reap(bool block) {
  if (exit_status_) return exit_status_;
  if (pid_ < 0) return Error::make(ErrorCode::internal, "The sandbox handle is empty.");
  int status = 0;
  const pid_t reaped = retry_on_eintr([&] { return ::waitpid(pid_, &status, block ? 0 : WNOHANG); });
  if (reaped < 0) return Error::from_errno(errno, "Waiting for the sandbox failed");
  if (reaped == 0) return std::optional<int>();
  exit_status_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  pidfd_.reset();
  if (cgroup_) final_hits_ = cgroup_->limit_hits();  // without one, nothing is left to count
  cgroup_.reset();  // the pid namespace is gone; the cgroup kills any straggler and goes
  return exit_status_;
}

Result<int> SandboxedProcess::wait() {
  DESKD_ASSIGN_OR_RETURN(auto status, reap(true));
  return *status;
}

Result<std::optional<int>> SandboxedProcess::wait_for(std::chrono::milliseconds timeout) {
  if (exit_status_ || !pidfd_) return reap(false);  // without a pidfd: a single look
  pollfd descriptor{pidfd_.get(), POLLIN, 0};
  const int ready = retry_on_eintr([&] { return ::poll(&descriptor, 1, static_cast<int>(timeout.count())); });
  if (ready < 0) return Error::from_errno(errno, "Waiting for the sandbox failed");
  return reap(false);
}

Result<void> SandboxedProcess::signal(int signal_number) {
  if (exit_status_ || pid_ < 0) return success();
  // The pidfd cannot name a recycled pid; fall back to kill() only without one.
  const long sent = pidfd_ ? ::syscall(SYS_pidfd_send_signal, pidfd_.get(), signal_number, nullptr, 0)
                           : ::kill(pid_, signal_number);
  if (sent != 0 && errno != ESRCH) return Error::from_errno(errno, "Signalling the sandbox failed");
  return success();
}

namespace {

// Every process below `pid`, from the PPid lines of /proc/*/status: the sandbox's pid
// namespace holds only its init's descendants. (Not /proc/PID/task/*/children: the init is
// non-dumpable, so an unprivileged deskd may not read those.) Only processes of the init's
// uid are looked at; every process of a sandbox runs as it.
std::uint64_t descendants(pid_t pid) {
  struct stat init_status {};
  const std::string init_folder = "/proc/" + std::to_string(pid);
  if (::stat(init_folder.c_str(), &init_status) != 0) return 0;
  std::multimap<pid_t, pid_t> children;
  DIR* proc = ::opendir("/proc");
  if (proc == nullptr) return 0;
  while (const dirent* entry = ::readdir(proc)) {
    if (entry->d_name[0] < '0' || entry->d_name[0] > '9') continue;
    const std::string folder = std::string("/proc/") + entry->d_name;
    struct stat status {};
    if (::stat(folder.c_str(), &status) != 0 || status.st_uid != init_status.st_uid) continue;
    std::ifstream file(folder + "/status");
    for (std::string line; std::getline(file, line);) {
      if (line.rfind("PPid:", 0) != 0) continue;
      children.emplace(static_cast<pid_t>(std::atol(line.c_str() + 5)), static_cast<pid_t>(std::atol(entry->d_name)));
      break;
    }
  }
  ::closedir(proc);
  std::uint64_t count = 0;
  std::vector<pid_t> pending{pid};
  while (!pending.empty()) {
    const pid_t next = pending.back();
    pending.pop_back();
    const auto [first, last] = children.equal_range(next);
    for (auto child = first; child != last; ++child) {
      ++count;
      pending.push_back(child->second);
    }
  }
  return count;
}

}  // namespace

std::uint64_t SandboxedProcess::processes_below_init() const {
  if (exit_status_ || pid_ < 0) return 0;
  // The cgroup's count is one read; the walk of /proc reads every process of the host, too
  // much for a thousand desks' idle terminals looked at once.
  if (cgroup_) {
    if (const auto tasks = cgroup_->tasks(); tasks && *tasks >= 1) return *tasks - 1;  // all but the init
  }
  return descendants(pid_);
}

LimitHits SandboxedProcess::limit_hits(std::uint64_t process_limit) const {
  if (cgroup_) return cgroup_->limit_hits();
  if (exit_status_ || pid_ < 0) return final_hits_;
  LimitHits hits;
  // RLIMIT_NPROC counts the uid's processes in the sandbox's user namespace as the kernel
  // sees them at fork; one short of the limit here (a process being reaped, say) is at it.
  if (descendants(pid_) + 2 >= process_limit) hits.process_limit = 1;
  return hits;
}

void SandboxedProcess::close() {
  if (pid_ < 0 || exit_status_) return;
  (void)signal(SIGKILL);
  if (cgroup_) cgroup_->kill_all();
  (void)reap(true);
}

}  // namespace deskd::sandbox
