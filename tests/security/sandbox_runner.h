#pragma once
// Drives the real `deskd sandbox` binary for the security suite: a temporary desk with
// secrets to hide, a run of deskd as a root daemon or as an ordinary user (with a timeout,
// so a broken sandbox cannot hang the suite), and the host-side checks the tests share.

#include <sys/types.h>

#include <chrono>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace deskd::security_testing {

/// Who runs deskd: root (the test process itself), or an unprivileged uid the test drops to.
enum class Daemon { root, unprivileged };

/// The uid/gid the test drops to for the unprivileged daemon.
inline constexpr uid_t kUnprivilegedUid = 4242;
/// The host uid/gid a root daemon's sandboxed processes run as (`--uid`/`--gid` default:
/// sandbox::kAdHocDeskUid, the ad-hoc commands' uid, outside every served desk's range).
inline constexpr uid_t kRootSandboxUid = 2147418112;

/// "RootDaemon" or "UnprivilegedDaemon", the test-name suffix for a daemon parameter.
std::string daemon_name(Daemon daemon);
std::string daemon_test_name(const ::testing::TestParamInfo<Daemon>& parameter);
/// How gtest prints the parameter in test names and failure messages.
void PrintTo(Daemon daemon, std::ostream* stream);

/// The host uid that files written inside a sandbox belong to, for this daemon.
uid_t sandbox_host_uid(Daemon daemon);
/// The host uid deskd itself runs as: 0, or kUnprivilegedUid.
uid_t daemon_host_uid(Daemon daemon);

/// The deskd binary, at a path the unprivileged uid can execute.
const std::string& deskd_binary();
/// The folder holding the copies of deskd and the probes, shown read-only to every sandbox.
const std::string& probe_folder();
/// A probe (e.g. "probe_open"), at a path the sandbox's uid can execute from inside.
std::string probe(std::string_view name);

struct LaunchOptions {
  /// "NAME=value" entries added to deskd's own environment (replacing the default of NAME).
  std::vector<std::string> environment;
  /// Open a few fds without O_CLOEXEC in the launching process before exec'ing deskd.
  bool open_extra_fds = false;
  /// deskd starts holding this many more descriptors (copies of /dev/null, not
  /// close-on-exec, numbered from 3 up), its RLIMIT_NOFILE soft limit raised to fit: a busy
  /// daemon whose descriptors reach past a desk's open-files limit.
  int crowd_descriptors = 0;
  /// deskd's working folder.
  std::string working_directory = "/";
  /// The file deskd reads as its standard input (opened by the test, before any uid change).
  std::string standard_input = "/dev/null";
  /// deskd's supplementary groups (either daemon); none by default, as a service should run.
  std::vector<gid_t> supplementary_groups;
  /// After this, deskd is killed with SIGKILL and the run counts as timed out.
  std::chrono::milliseconds timeout{20000};
};

/// What one run of deskd did.
struct SandboxRun {
  /// deskd's exit code; 128+N when deskd itself died of signal N; -1 if it never ended.
  int exit_status = -1;
  bool timed_out = false;
  /// stdout or stderr was still held open by something 1 s after deskd had exited: a
  /// process of the sandbox outlived it.
  bool output_left_open = false;
  std::string out;
  std::string err;

  /// The whole run, for failure messages.
  std::string describe() const;
};

/// Runs `deskd ARGUMENTS...` as the given daemon, stdin from options.standard_input.
SandboxRun run_deskd(Daemon daemon, const std::vector<std::string>& arguments,
                     const LaunchOptions& options = {});

/// A temporary desk holding a hidden file (.env) and a hidden folder (secrets/) with a
/// secret string that is unique to the test process, plus readable controls next to them.
/// Owned so that the sandbox's uid can use it: by the unprivileged uid for that daemon; for
/// a root daemon the tree is root's and world-readable, with the writable places owned by
/// the sandbox uid. The secrets are world-readable on purpose: only the masks may keep them
/// from the sandbox, never plain file permissions.
class TestDesk {
 public:
  explicit TestDesk(Daemon daemon);
  ~TestDesk();
  TestDesk(const TestDesk&) = delete;
  TestDesk& operator=(const TestDesk&) = delete;

  /// The desk folder (resolved).
  const std::string& directory() const { return directory_; }
  /// The temporary folder holding the desk, removed with it.
  const std::string& root() const { return root_; }
  /// DESK/relative.
  std::string path(std::string_view relative) const;
  /// The string every hidden file holds and no sandboxed process may print.
  const std::string& secret() const { return secret_; }
  /// --desk DESK --hide DESK/.env --hide DESK/secrets --read-only <probe folder>
  std::vector<std::string> sandbox_arguments() const;
  /// Gives a path the test created later to the uid of this desk's daemon.
  void hand_over(const std::string& path) const;

 private:
  Daemon daemon_;
  std::string root_;
  std::string directory_;
  std::string secret_;
};

/// Runs `deskd sandbox <desk arguments> EXTRA... -- COMMAND...`.
SandboxRun run_in_sandbox(Daemon daemon, const TestDesk& desk,
                          const std::vector<std::string>& command,
                          const std::vector<std::string>& extra_arguments = {},
                          const LaunchOptions& options = {});

/// Fixture for the tests that run the same way under both daemons.
class SandboxTest : public ::testing::TestWithParam<Daemon> {
 protected:
  void SetUp() override { desk_ = std::make_unique<TestDesk>(GetParam()); }
  void TearDown() override { desk_.reset(); }

  Daemon daemon() const { return GetParam(); }
  const TestDesk& desk() const { return *desk_; }
  SandboxRun sandbox(const std::vector<std::string>& command,
                     const std::vector<std::string>& extra_arguments = {},
                     const LaunchOptions& options = {}) const {
    return run_in_sandbox(GetParam(), *desk_, command, extra_arguments, options);
  }

 private:
  std::unique_ptr<TestDesk> desk_;
};

/// Instantiates a SandboxTest-derived suite once per daemon.
#define DESKD_FOR_BOTH_DAEMONS(suite)                                                      \
  INSTANTIATE_TEST_SUITE_P(                                                                \
      Daemons, suite,                                                                      \
      ::testing::Values(::deskd::security_testing::Daemon::root,                           \
                        ::deskd::security_testing::Daemon::unprivileged),                  \
      ::deskd::security_testing::daemon_test_name)

// ---- host-side helpers ----

/// A folder the test makes on the host outside any desk (/var/tmp/X, /etc/X, ...), mode
/// 0755 and owned by `owner` (uid and gid); removed, with what it holds, with the object.
class HostFolder {
 public:
  HostFolder(std::string path, uid_t owner);
  ~HostFolder();
  HostFolder(const HostFolder&) = delete;
  HostFolder& operator=(const HostFolder&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

/// The first line of text, without its newline.
std::string first_line(std::string_view text);
/// The file's contents, or nullopt when it cannot be read.
std::optional<std::string> read_host_file(const std::string& path);
/// Writes a file on the host (test setup), failing the test if it cannot.
void write_host_file(const std::string& path, std::string_view contents, mode_t mode = 0644);
/// A name no other test process uses: PREFIX-<pid>-<counter>-<random>.
std::string unique_name(std::string_view prefix);
/// Host pids whose command line contains marker (the test process excluded).
std::vector<pid_t> host_processes_with(std::string_view marker);
/// Polls until there are none, for at most `patience`; returns what is left.
std::vector<pid_t> wait_for_no_processes_with(std::string_view marker,
                                              std::chrono::milliseconds patience);
/// One line per process: pid, parent, host uid, command line — for failure messages.
std::string describe_processes(const std::vector<pid_t>& pids);

}  // namespace deskd::security_testing
