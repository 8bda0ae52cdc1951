#pragma once
// Drives the real deskd binary for the end-to-end tests: a child process with a pipe on its
// standard input (or a file), its standard output read line by line, its standard error
// kept in a file, and timeouts everywhere so that a hang fails the test instead of the
// suite. Also a temporary desk with a secret to hide.

#include <sys/types.h>

#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace deskd::e2e {

using namespace std::chrono_literals;

class DeskdProcess {
 public:
  /// Starts `deskd ARGUMENTS...`; stdin is a pipe, or the file `stdin_path` when given.
  /// `environment` ("NAME=value" each) is added to the test's own, replacing a variable of
  /// the same name. With `run_as`, deskd runs as that uid and gid (no supplementary groups)
  /// instead of the test's: an unprivileged deskd started by a root test.
  explicit DeskdProcess(const std::vector<std::string>& arguments,
                        std::optional<std::string> stdin_path = std::nullopt,
                        const std::vector<std::string>& environment = {},
                        std::optional<uid_t> run_as = std::nullopt);
  ~DeskdProcess();
  DeskdProcess(const DeskdProcess&) = delete;
  DeskdProcess& operator=(const DeskdProcess&) = delete;

  /// Writes to deskd's standard input.
  void send(std::string_view text);
  /// Closes deskd's standard input: end of input.
  void close_input();
  /// The next line deskd printed, without its newline; nullopt at end of output or timeout.
  std::optional<std::string> read_line(std::chrono::milliseconds timeout = 30s);
  /// Everything left on standard output until deskd closes it (or the timeout).
  std::string read_rest(std::chrono::milliseconds timeout = 30s);
  /// Sends `signal_number` to deskd.
  void signal(int signal_number);
  /// Waits for deskd to exit: its exit code, 128+N if a signal ended it, or -1 after the
  /// timeout (deskd is then killed).
  int wait(std::chrono::milliseconds timeout = 30s);
  /// Whether deskd is still running (never waits; reaps it when it has exited).
  bool running();
  /// What deskd wrote to standard error so far.
  std::string error_output() const;

 private:
  pid_t pid_ = -1;
  int input_ = -1;
  int output_ = -1;
  std::string error_path_;
  std::string buffer_;
  std::optional<int> status_;
};

/// A temporary desk: <root>/desk with README.md, the writable places, and a hidden .env
/// holding secret(); removed with the object. World-readable so that the sandbox's own uid
/// (under a root deskd) can enter it.
class TemporaryDesk {
 public:
  TemporaryDesk();
  ~TemporaryDesk();
  const std::string& directory() const { return directory_; }
  const std::string& root() const { return root_; }
  const std::string& secret() const { return secret_; }
  /// --desk DESK --hide DESK/.env
  std::vector<std::string> arguments() const;

 private:
  std::string root_;
  std::string directory_;
  std::string secret_;
};

/// The path of the deskd binary under test.
const char* deskd_binary();

}  // namespace deskd::e2e
