#pragma once
// Drives `deskd serve` for the end-to-end tests: a config with its desks and script models
// in a temporary folder under /var/tmp (sandboxes get a fresh /tmp, so nothing a desk sees
// may live there), the daemon as a DeskdProcess, deskctl runs with their output and exit
// status, and raw JSON-line connections to the control socket. Every wait has a timeout.

#include <boost/json/object.hpp>

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "e2e/deskd_process.h"

namespace deskd::e2e {

/// What a finished deskctl printed, and its exit status (-1: killed after its timeout).
struct DeskctlResult {
  int exit_code = -1;
  std::string output;
  std::string error_output;
  std::chrono::milliseconds elapsed{0};
};

/// deskctl running in the background, its output collected by finish().
class DeskctlProcess {
 public:
  /// Starts `deskctl ARGUMENTS...` with no standard input.
  explicit DeskctlProcess(const std::vector<std::string>& arguments);
  ~DeskctlProcess();  ///< kills deskctl if finish() never collected it
  DeskctlProcess(const DeskctlProcess&) = delete;
  DeskctlProcess& operator=(const DeskctlProcess&) = delete;

  /// Reads deskctl's output until it exits; past `timeout` it is killed (exit_code -1).
  DeskctlResult finish(std::chrono::milliseconds timeout = 30s);

 private:
  pid_t pid_ = -1;
  int output_ = -1;
  int error_ = -1;
  std::chrono::steady_clock::time_point started_;
};

/// One raw connection to the control socket: JSON lines each way.
class ControlConnection {
 public:
  /// Connects to `socket_path`; connected() says whether it worked.
  explicit ControlConnection(const std::string& socket_path);
  ~ControlConnection();
  ControlConnection(ControlConnection&& other) noexcept;
  ControlConnection(const ControlConnection&) = delete;
  ControlConnection& operator=(const ControlConnection&) = delete;

  bool connected() const { return fd_ >= 0; }
  int fd() const { return fd_; }
  /// Writes all of `bytes` (no newline added); false when the socket refused them.
  bool send_raw(std::string_view bytes);
  /// Writes `request` as one line.
  bool send(const boost::json::object& request);
  /// The next line, without its newline; nullopt at end of stream, error or timeout.
  std::optional<std::string> read_line(std::chrono::milliseconds timeout = 30s);
  /// The next line as a JSON object; nullopt as read_line, or when the line is not one.
  std::optional<boost::json::object> read_object(std::chrono::milliseconds timeout = 30s);
  /// Sends `request` and returns the reply that echoes its "id" (lines in between, such as
  /// events of a follow, are skipped); nullopt when none came in time.
  std::optional<boost::json::object> call(boost::json::object request, std::chrono::milliseconds timeout = 30s);
  /// Reads until an event (the "event" of a {"id","event"} line) matching `wanted`; the
  /// events read on the way are appended to `seen` when given.
  std::optional<boost::json::object> wait_for_event(const std::function<bool(const boost::json::object&)>& wanted,
                                                    std::chrono::milliseconds timeout = 30s,
                                                    std::vector<boost::json::object>* seen = nullptr);
  /// Whether deskd closed the connection (end of stream or reset) within `timeout`;
  /// whatever arrives before is discarded.
  bool closed_by_peer(std::chrono::milliseconds timeout = 10s);

 private:
  int fd_ = -1;
  std::string buffer_;
};

/// A desk of the test config: its folder is <folder>/desks/NAME (README.md, plan.md and a
/// hidden .env); its script model is <folder>/NAME.jsonl.
struct DeskSetup {
  std::string name;
  std::string script;    ///< the script's JSON lines
  std::string settings = {};  ///< TOML lines added to its [[desk]] table (before its subtables)
  std::string tables = {};    ///< TOML added after [desk.model], e.g. [[desk.schedule]] tables
  std::string model = {};     ///< the [desk.model] lines; empty: the script model on `script`
  std::vector<std::string> hidden_paths = {};  ///< hidden beside its .env, relative to the config folder
};

/// A config in a temporary folder and `deskd serve` on it. The destructor stops deskd with
/// SIGTERM (SIGKILL if it does not exit) and removes the folder; it asserts nothing.
class ServeDaemon {
 public:
  /// Writes the config: a [runner] with the state folder and socket in the temporary
  /// folder, shutdown_grace_seconds = 1, plus `runner_settings` lines; [sandbox] with
  /// disk_quota_mb = "none"; then `tables` (TOML tables such as [model]); then the desks.
  explicit ServeDaemon(std::initializer_list<DeskSetup> desks, std::string runner_settings = "",
                       std::string tables = "");
  /// The same for desks listed at run time (the density test's hundreds of desks).
  explicit ServeDaemon(const std::vector<DeskSetup>& desks, std::string runner_settings = "",
                       std::string tables = "");
  ~ServeDaemon();
  ServeDaemon(const ServeDaemon&) = delete;
  ServeDaemon& operator=(const ServeDaemon&) = delete;

  /// Starts `deskd serve --config` with `environment` added to the test's and waits until
  /// the socket answers a desks request and no desk is still "starting" (reading its
  /// journal); false (with deskd's log in `why`) when it did not.
  bool start(const std::vector<std::string>& environment = {}, std::string* why = nullptr,
             std::chrono::milliseconds timeout = 30s);
  /// Before start(): deskd will run as `uid` (and the same gid), an unprivileged deskd; the
  /// temporary folder, config, desks and scripts are given to it.
  void run_as(uid_t uid);
  /// Starts `deskd serve --config` and returns at once.
  void launch(const std::vector<std::string>& environment = {});
  /// The state of each desk ("starting", "idle", ...) once the socket answers, or an
  /// empty list when it did not within `timeout`.
  std::vector<std::pair<std::string, std::string>> desk_states(std::chrono::milliseconds timeout = 30s) const;
  /// SIGTERM, then deskd's exit status (-1 when it did not exit within `timeout`).
  int stop(std::chrono::milliseconds timeout = 30s);
  /// The running deskd; start() must have run.
  DeskdProcess& process() { return *deskd_; }
  bool started() const { return deskd_ != nullptr; }

  const std::string& folder() const { return folder_; }
  std::string config_path() const { return folder_ + "/deskd.toml"; }
  std::string socket_path() const { return folder_ + "/state/deskd.sock"; }
  std::string desk_directory(const std::string& desk) const { return folder_ + "/desks/" + desk; }
  std::string script_path(const std::string& desk) const { return folder_ + "/" + desk + ".jsonl"; }
  std::string journal_path(const std::string& desk) const { return folder_ + "/state/desks/" + desk + "/journal.jsonl"; }
  std::string session_path(const std::string& desk) const {
    return folder_ + "/state/desks/" + desk + "/sessions/current.json";
  }

  /// Runs `deskctl --socket SOCKET ARGUMENTS...` to its end.
  DeskctlResult deskctl(const std::vector<std::string>& arguments, std::chrono::milliseconds timeout = 30s) const;
  /// Starts it in the background.
  std::unique_ptr<DeskctlProcess> deskctl_in_background(const std::vector<std::string>& arguments) const;
  /// A new raw connection to the socket.
  ControlConnection connect() const { return ControlConnection(socket_path()); }
  /// A connection following `desk`'s events from now on (every desk's when empty).
  std::optional<ControlConnection> follow(const std::string& desk, bool replay = false) const;

 private:
  std::string folder_;
  std::optional<uid_t> run_as_;
  std::unique_ptr<DeskdProcess> deskd_;
};

/// The path of the deskctl binary under test.
const char* deskctl_binary();

/// A file's whole content ("" when it cannot be read).
std::string file_text(const std::string& path);
/// The JSON objects of a JSON-lines file (lines that are not objects are skipped).
std::vector<boost::json::object> json_lines(const std::string& path);
/// event["kind"], and event["data"][field] as text ("" when absent or not a string).
std::string event_kind(const boost::json::object& event);
std::string event_data(const boost::json::object& event, std::string_view field);
/// A predicate for wait_for_event: kind is `kind`, and data.trigger is `trigger` when given.
std::function<bool(const boost::json::object&)> is_event(std::string kind, std::string trigger = "");

}  // namespace deskd::e2e
