#include "security/sandbox_runner.h"

#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <random>
#include <sstream>
#include <thread>
#include <utility>

namespace deskd::security_testing {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

// A per-process copy of the binaries in a world-readable folder under /var/tmp, which every
// sandbox of the suite is shown read-only (--read-only): the minimal host view shows no
// build tree, and other uids may not reach it anyway.
class BinaryCopies {
 public:
  static BinaryCopies& instance() {
    static BinaryCopies copies;
    return copies;
  }
  std::string locate(const fs::path& original) {
    // A build tree under /tmp (a CI clone, say) is out of the sandbox's sight: its /tmp is
    // a fresh tmpfs. Such binaries are copied too.
    if (const auto known = copies_.find(original); known != copies_.end()) return known->second;
    fs::path copy = fs::path(folder()) / original.filename();
    std::error_code error;
    fs::copy_file(original, copy, fs::copy_options::overwrite_existing, error);
    ::chmod(copy.c_str(), 0755);
    copies_[original] = copy;
    return copy;
  }
  const std::string& folder() {
    if (folder_.empty()) {
      std::string pattern = "/var/tmp/deskd-security-bin-XXXXXX";
      if (::mkdtemp(pattern.data()) == nullptr) std::abort();
      folder_ = pattern;
      ::chmod(folder_.c_str(), 0755);
    }
    return folder_;
  }
  ~BinaryCopies() {
    std::error_code error;
    if (!folder_.empty()) fs::remove_all(folder_, error);
  }

 private:
  std::string folder_;
  std::map<fs::path, std::string> copies_;
};

// Environment deskd itself runs with: a daemon's, holding secrets no sandbox may see.
std::vector<std::string> daemon_environment(Daemon daemon, const LaunchOptions& options) {
  std::vector<std::string> environment = {
      "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
      daemon == Daemon::root ? "HOME=/root" : "HOME=/nonexistent",
      "LANG=C.UTF-8",
      "DESKD_TEST_SECRET=daemon-only-value",
      "ANTHROPIC_API_KEY=sk-ant-test-must-not-leak",
  };
  // A variable the options name again (HOME, say) takes the options' value.
  for (const std::string& entry : options.environment) {
    const std::string prefix = entry.substr(0, entry.find('=') + 1);
    std::erase_if(environment, [&](const std::string& each) { return each.rfind(prefix, 0) == 0; });
    environment.push_back(entry);
  }
  return environment;
}

}  // namespace

const std::string& probe_folder() { return BinaryCopies::instance().folder(); }

namespace {

std::vector<char*> pointers(std::vector<std::string>& strings) {
  std::vector<char*> result;
  for (auto& each : strings) result.push_back(each.data());
  result.push_back(nullptr);
  return result;
}

// In the forked child, before exec. Only async-signal-safe calls: the test binary may
// have threads (gtest does not, but a sanitizer runtime might).
[[noreturn]] void child_exit(const char* step) {
  const char* reason = std::strerror(errno);
  (void)!::write(2, "security test launcher: ", 24);
  (void)!::write(2, step, std::strlen(step));
  (void)!::write(2, ": ", 2);
  (void)!::write(2, reason, std::strlen(reason));
  (void)!::write(2, "\n", 1);
  ::_exit(120);
}

// The launcher had other fds open: a file, both ends of a pipe and a socket, at numbers
// close_range() must reach, none close-on-exec.
void open_extra_fds() {
  const int file = ::open("/etc/hostname", O_RDONLY);
  int pipe_ends[2];
  const int socket = ::socket(AF_UNIX, SOCK_STREAM, 0);
  if (file < 0 || ::pipe(pipe_ends) != 0 || socket < 0) child_exit("open extra fds");
  if (::dup2(file, 37) < 0 || ::dup2(pipe_ends[0], 100) < 0 || ::dup2(pipe_ends[1], 101) < 0 ||
      ::dup2(socket, 255) < 0)
    child_exit("dup2 extra fds");
}

// Fills the descriptor numbers from 3 up with `count` copies of /dev/null, after raising
// the soft RLIMIT_NOFILE to fit them (and deskd's own descriptors beyond).
void crowd_descriptors(int count) {
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) != 0) child_exit("getrlimit(RLIMIT_NOFILE)");
  const rlim_t wanted = static_cast<rlim_t>(count) + 256;
  if (limit.rlim_max != RLIM_INFINITY && limit.rlim_max < wanted) {
    errno = EMFILE;
    child_exit("the hard RLIMIT_NOFILE is too low for the crowd of descriptors");
  }
  limit.rlim_cur = wanted;
  if (::setrlimit(RLIMIT_NOFILE, &limit) != 0) child_exit("raise RLIMIT_NOFILE");
  const int null = ::open("/dev/null", O_RDONLY);
  if (null < 0) child_exit("open /dev/null");
  for (int index = 1; index < count; ++index) {
    if (::fcntl(null, F_DUPFD, 3) < 0) child_exit("crowd the descriptors");
  }
}

// The test process is root: without setgroups the daemon would keep root's groups.
void set_supplementary_groups(const std::vector<gid_t>& groups) {
  if (::setgroups(groups.size(), groups.data()) != 0) child_exit("setgroups");
}

void drop_to_unprivileged_uid() {
  const gid_t gid = kUnprivilegedUid;
  if (::setresgid(gid, gid, gid) != 0) child_exit("setresgid");
  if (::setresuid(kUnprivilegedUid, kUnprivilegedUid, kUnprivilegedUid) != 0)
    child_exit("setresuid");
}

// Appends what is readable on fd; closes it and sets it to -1 at end of file.
void drain(int& fd, std::string& into) {
  char buffer[65536];
  for (;;) {
    const ssize_t got = ::read(fd, buffer, sizeof buffer);
    if (got > 0) {
      into.append(buffer, static_cast<size_t>(got));
      continue;
    }
    if (got < 0 && errno == EINTR) continue;
    if (got < 0 && errno == EAGAIN) return;
    ::close(fd);
    fd = -1;
    return;
  }
}

int decode(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return -1;
}

}  // namespace

std::string daemon_name(Daemon daemon) {
  return daemon == Daemon::root ? "RootDaemon" : "UnprivilegedDaemon";
}

std::string daemon_test_name(const ::testing::TestParamInfo<Daemon>& parameter) {
  return daemon_name(parameter.param);
}

void PrintTo(Daemon daemon, std::ostream* stream) { *stream << daemon_name(daemon); }

uid_t sandbox_host_uid(Daemon daemon) {
  return daemon == Daemon::root ? kRootSandboxUid : kUnprivilegedUid;
}

uid_t daemon_host_uid(Daemon daemon) { return daemon == Daemon::root ? 0 : kUnprivilegedUid; }

const std::string& deskd_binary() {
  // deskd executes deskd-full, next to it, for every command but `deskd sandbox`.
  static const std::string path = [] {
    (void)BinaryCopies::instance().locate(fs::path(DESKD_BINARY).parent_path() / "deskd-full");
    return BinaryCopies::instance().locate(DESKD_BINARY);
  }();
  return path;
}

std::string probe(std::string_view name) {
  return BinaryCopies::instance().locate(fs::path(DESKD_PROBE_DIRECTORY) / name);
}

std::string SandboxRun::describe() const {
  std::ostringstream text;
  text << "exit status " << exit_status << (timed_out ? " (timed out, killed)" : "")
       << (output_left_open ? " (output left open after exit)" : "") << "\n--- stdout ---\n"
       << out << "\n--- stderr ---\n"
       << err;
  return text.str();
}

SandboxRun run_deskd(Daemon daemon, const std::vector<std::string>& arguments,
                     const LaunchOptions& options) {
  std::vector<std::string> argv_strings = {deskd_binary()};
  argv_strings.insert(argv_strings.end(), arguments.begin(), arguments.end());
  std::vector<std::string> environment = daemon_environment(daemon, options);
  std::vector<char*> argv = pointers(argv_strings);
  std::vector<char*> envp = pointers(environment);

  SandboxRun run;
  int out_pipe[2];
  int err_pipe[2];
  if (::pipe2(out_pipe, O_CLOEXEC) != 0 || ::pipe2(err_pipe, O_CLOEXEC) != 0) {
    run.err = "pipe2 failed";
    return run;
  }
  const pid_t child = ::fork();
  if (child < 0) {
    run.err = "fork failed";
    return run;
  }
  if (child == 0) {
    const int input = ::open(options.standard_input.c_str(), O_RDONLY);
    if (input < 0 || ::dup2(input, 0) < 0 || ::dup2(out_pipe[1], 1) < 0 ||
        ::dup2(err_pipe[1], 2) < 0)
      child_exit("redirect stdio");
    if (options.open_extra_fds) open_extra_fds();
    if (options.crowd_descriptors > 0) crowd_descriptors(options.crowd_descriptors);
    if (::chdir(options.working_directory.c_str()) != 0) child_exit("chdir");
    set_supplementary_groups(options.supplementary_groups);
    if (daemon == Daemon::unprivileged) drop_to_unprivileged_uid();
    // After the uid change, which clears it: deskd must not outlive a crashed test.
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    ::execve(argv[0], argv.data(), envp.data());
    child_exit("execve deskd");
  }
  ::close(out_pipe[1]);
  ::close(err_pipe[1]);
  int out_fd = out_pipe[0];
  int err_fd = err_pipe[0];
  ::fcntl(out_fd, F_SETFL, O_NONBLOCK);
  ::fcntl(err_fd, F_SETFL, O_NONBLOCK);
  // A pidfd wakes poll() when deskd exits, even if a leftover process keeps the pipes open.
  const int pid_fd = static_cast<int>(::syscall(SYS_pidfd_open, child, 0));

  const auto deadline = Clock::now() + options.timeout;
  std::optional<Clock::time_point> exited_at;
  for (;;) {
    const auto now = Clock::now();
    if (!exited_at && now >= deadline) {
      ::kill(child, SIGKILL);
      run.timed_out = true;
    }
    if (!exited_at) {
      int status = 0;
      const pid_t waited = ::waitpid(child, &status, run.timed_out ? 0 : WNOHANG);
      if (waited == child) {
        run.exit_status = run.timed_out ? -1 : decode(status);
        exited_at = Clock::now();
      }
    }
    if (out_fd < 0 && err_fd < 0 && exited_at) break;
    if (exited_at && Clock::now() - *exited_at > std::chrono::seconds(1)) {
      run.output_left_open = true;
      break;
    }
    pollfd watched[3] = {{out_fd, POLLIN, 0}, {err_fd, POLLIN, 0},
                         {exited_at ? -1 : pid_fd, POLLIN, 0}};
    // Short slices: without a pidfd, exit is noticed by the next waitpid.
    ::poll(watched, 3, pid_fd >= 0 ? 100 : 10);
    if (out_fd >= 0) drain(out_fd, run.out);
    if (err_fd >= 0) drain(err_fd, run.err);
  }
  if (out_fd >= 0) ::close(out_fd);
  if (err_fd >= 0) ::close(err_fd);
  if (pid_fd >= 0) ::close(pid_fd);
  return run;
}

SandboxRun run_in_sandbox(Daemon daemon, const TestDesk& desk,
                          const std::vector<std::string>& command,
                          const std::vector<std::string>& extra_arguments,
                          const LaunchOptions& options) {
  std::vector<std::string> arguments = {"sandbox"};
  for (const auto& each : desk.sandbox_arguments()) arguments.push_back(each);
  arguments.insert(arguments.end(), extra_arguments.begin(), extra_arguments.end());
  arguments.push_back("--");
  arguments.insert(arguments.end(), command.begin(), command.end());
  return run_deskd(daemon, arguments, options);
}

HostFolder::HostFolder(std::string path, uid_t owner) : path_(std::move(path)) {
  std::error_code error;
  fs::create_directory(path_, error);
  if (error) ADD_FAILURE() << "mkdir " << path_ << ": " << error.message();
  ::chmod(path_.c_str(), 0755);
  if (::chown(path_.c_str(), owner, owner) != 0) ADD_FAILURE() << "chown " << path_;
}

HostFolder::~HostFolder() {
  std::error_code error;
  fs::remove_all(path_, error);
  if (error) ADD_FAILURE() << "could not remove " << path_ << ": " << error.message();
}

std::string first_line(std::string_view text) {
  return std::string(text.substr(0, text.find('\n')));
}

std::optional<std::string> read_host_file(const std::string& path) {
  std::ifstream stream(path, std::ios::binary);
  if (!stream) return std::nullopt;
  return std::string(std::istreambuf_iterator<char>(stream), std::istreambuf_iterator<char>());
}

void write_host_file(const std::string& path, std::string_view contents, mode_t mode) {
  {
    std::ofstream stream(path, std::ios::binary | std::ios::trunc);
    stream.write(contents.data(), static_cast<std::streamsize>(contents.size()));
    if (!stream) ADD_FAILURE() << "could not write " << path;
  }
  ::chmod(path.c_str(), mode);
}

std::string unique_name(std::string_view prefix) {
  static unsigned counter = 0;
  static std::mt19937_64 random{std::random_device{}()};
  std::ostringstream name;
  name << prefix << '-' << ::getpid() << '-' << ++counter << '-' << std::hex << random();
  return name.str();
}

std::vector<pid_t> host_processes_with(std::string_view marker) {
  std::vector<pid_t> found;
  std::error_code error;
  for (const auto& entry : fs::directory_iterator("/proc", error)) {
    const std::string name = entry.path().filename();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    const pid_t pid = static_cast<pid_t>(std::stol(name));
    if (pid == ::getpid()) continue;
    const auto command_line = read_host_file(entry.path() / "cmdline");
    if (command_line && command_line->find(marker) != std::string::npos) found.push_back(pid);
  }
  return found;
}

std::vector<pid_t> wait_for_no_processes_with(std::string_view marker,
                                              std::chrono::milliseconds patience) {
  const auto deadline = Clock::now() + patience;
  for (;;) {
    auto left = host_processes_with(marker);
    if (left.empty() || Clock::now() >= deadline) return left;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

std::string describe_processes(const std::vector<pid_t>& pids) {
  std::ostringstream text;
  for (pid_t pid : pids) {
    const std::string folder = "/proc/" + std::to_string(pid);
    std::string parent = "?";
    std::string uid = "?";
    std::istringstream status(read_host_file(folder + "/status").value_or(""));
    for (std::string line; std::getline(status, line);) {
      if (line.rfind("PPid:", 0) == 0) parent = line.substr(6);
      if (line.rfind("Uid:", 0) == 0) uid = line.substr(5, line.find('\t', 5) - 5);
    }
    std::string command = read_host_file(folder + "/cmdline").value_or("");
    for (char& each : command)
      if (each == '\0') each = ' ';
    text << "  pid " << pid << " ppid " << parent << " uid " << uid << ": " << command << "\n";
  }
  return text.str();
}

}  // namespace deskd::security_testing
