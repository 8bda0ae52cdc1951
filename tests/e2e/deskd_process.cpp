#include "e2e/deskd_process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <grp.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <thread>

namespace deskd::e2e {
namespace {

namespace fs = std::filesystem;

std::string temporary_path(const char* prefix) {
  std::random_device random;
  return (fs::temp_directory_path() / (std::string(prefix) + std::to_string(::getpid()) + "-" + std::to_string(random()))).native();
}

}  // namespace

const char* deskd_binary() { return DESKD_BINARY; }

DeskdProcess::DeskdProcess(const std::vector<std::string>& arguments, std::optional<std::string> stdin_path,
                           const std::vector<std::string>& environment, std::optional<uid_t> run_as)
    : error_path_(temporary_path("deskd-e2e-stderr-")) {
  int input_pipe[2] = {-1, -1};
  int output_pipe[2];
  if (!stdin_path && ::pipe2(input_pipe, O_CLOEXEC) != 0) ADD_FAILURE() << "pipe";
  if (::pipe2(output_pipe, O_CLOEXEC) != 0) ADD_FAILURE() << "pipe";
  std::vector<std::string> argv_storage = {deskd_binary()};
  argv_storage.insert(argv_storage.end(), arguments.begin(), arguments.end());
  std::vector<char*> argv;
  for (auto& argument : argv_storage) argv.push_back(argument.data());
  argv.push_back(nullptr);
  // The environment is built before fork: the child only execs.
  std::vector<std::string> environment_storage;
  for (char** variable = environ; *variable != nullptr; ++variable) {
    const std::string_view entry(*variable);
    const auto replaced = [&](const std::string& added) {
      const std::size_t equals = added.find('=');
      return entry.substr(0, entry.find('=')) == std::string_view(added).substr(0, equals);
    };
    if (std::none_of(environment.begin(), environment.end(), replaced)) environment_storage.emplace_back(entry);
  }
  environment_storage.insert(environment_storage.end(), environment.begin(), environment.end());
  std::vector<char*> envp;
  for (auto& variable : environment_storage) envp.push_back(variable.data());
  envp.push_back(nullptr);
  const int error_fd = ::open(error_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  const int stdin_fd = stdin_path ? ::open(stdin_path->c_str(), O_RDONLY | O_CLOEXEC) : input_pipe[0];

  pid_ = ::fork();
  if (pid_ == 0) {
    ::dup2(stdin_fd, 0);
    ::dup2(output_pipe[1], 1);
    ::dup2(error_fd, 2);
    if (run_as) {
      const gid_t gid = *run_as;
      if (::setgroups(0, nullptr) != 0 || ::setresgid(gid, gid, gid) != 0 ||
          ::setresuid(*run_as, *run_as, *run_as) != 0) {
        ::_exit(126);
      }
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);  // the uid change cleared it; deskd must not outlive the test
    }
    ::execve(argv[0], argv.data(), envp.data());
    ::_exit(127);
  }
  ::close(stdin_fd);
  ::close(output_pipe[1]);
  ::close(error_fd);
  input_ = stdin_path ? -1 : input_pipe[1];
  output_ = output_pipe[0];
}

DeskdProcess::~DeskdProcess() {
  if (!status_ && pid_ > 0) {
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
  }
  close_input();
  if (output_ >= 0) ::close(output_);
  ::unlink(error_path_.c_str());
}

void DeskdProcess::send(std::string_view text) {
  ASSERT_GE(input_, 0) << "standard input is not a pipe, or already closed";
  for (std::size_t offset = 0; offset < text.size();) {
    const ssize_t written = ::write(input_, text.data() + offset, text.size() - offset);
    ASSERT_GT(written, 0) << "writing to deskd failed: " << std::strerror(errno);
    offset += static_cast<std::size_t>(written);
  }
}

void DeskdProcess::close_input() {
  if (input_ >= 0) ::close(input_);
  input_ = -1;
}

std::optional<std::string> DeskdProcess::read_line(std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    if (const auto newline = buffer_.find('\n'); newline != std::string::npos) {
      std::string line = buffer_.substr(0, newline);
      buffer_.erase(0, newline + 1);
      return line;
    }
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return std::nullopt;
    pollfd waiting{output_, POLLIN, 0};
    if (::poll(&waiting, 1, static_cast<int>(left.count())) <= 0) return std::nullopt;
    char chunk[65536];
    const ssize_t count = ::read(output_, chunk, sizeof chunk);
    if (count <= 0) return std::nullopt;
    buffer_.append(chunk, static_cast<std::size_t>(count));
  }
}

std::string DeskdProcess::read_rest(std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    pollfd waiting{output_, POLLIN, 0};
    if (left.count() <= 0 || ::poll(&waiting, 1, static_cast<int>(left.count())) <= 0) break;
    char chunk[65536];
    const ssize_t count = ::read(output_, chunk, sizeof chunk);
    if (count <= 0) break;
    buffer_.append(chunk, static_cast<std::size_t>(count));
  }
  return std::exchange(buffer_, {});
}

void DeskdProcess::signal(int signal_number) { ::kill(pid_, signal_number); }

bool DeskdProcess::running() {
  if (status_) return false;
  int raw = 0;
  if (::waitpid(pid_, &raw, WNOHANG) != pid_) return true;
  status_ = WIFEXITED(raw) ? WEXITSTATUS(raw) : 128 + WTERMSIG(raw);
  return false;
}

int DeskdProcess::wait(std::chrono::milliseconds timeout) {
  if (status_) return *status_;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  int raw = 0;
  for (;;) {
    const pid_t waited = ::waitpid(pid_, &raw, WNOHANG);
    if (waited == pid_) break;
    if (std::chrono::steady_clock::now() > deadline) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, &raw, 0);
      status_ = -1;
      return -1;
    }
    std::this_thread::sleep_for(10ms);
  }
  status_ = WIFEXITED(raw) ? WEXITSTATUS(raw) : 128 + WTERMSIG(raw);
  return *status_;
}

std::string DeskdProcess::error_output() const {
  std::ifstream file(error_path_);
  std::stringstream text;
  text << file.rdbuf();
  return text.str();
}

TemporaryDesk::TemporaryDesk() : secret_("deskd-e2e-secret-" + std::to_string(::getpid())) {
  std::string pattern = "/var/tmp/deskd-e2e-XXXXXX";
  if (::mkdtemp(pattern.data()) == nullptr) {
    ADD_FAILURE() << "mkdtemp " << pattern;
    return;
  }
  root_ = fs::canonical(pattern);
  directory_ = root_ + "/desk";
  fs::create_directory(directory_);
  for (const std::string& folder : {root_, directory_}) ::chmod(folder.c_str(), 0755);
  std::ofstream(directory_ + "/README.md") << "This desk is for tests.\n";
  std::ofstream(directory_ + "/.env") << "API_KEY=" << secret_ << "\n";
}

TemporaryDesk::~TemporaryDesk() {
  std::error_code error;
  if (!root_.empty()) fs::remove_all(root_, error);
}

std::vector<std::string> TemporaryDesk::arguments() const {
  return {"--desk", directory_, "--hide", directory_ + "/.env"};
}

}  // namespace deskd::e2e
