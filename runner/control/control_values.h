#pragma once
// What the daemon answers the control socket with, as values. The daemon fills them; the
// control-op table (control_ops.cpp) is the one place each becomes its reply's JSON.

#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace deskd::control {

/// One desk, as `deskctl desks` lists it.
struct DeskSummary {
  std::string name;
  std::string mode;
  std::string directory;
  std::string state;  ///< stopped, starting, idle, running
  /// A desk that could not start says why.
  std::optional<std::string> error;
  /// Only for a desk that was assembled (one that failed to start has none of them).
  struct Running {
    bool paused = false;
    std::size_t queued = 0;
    std::size_t waiting_bytes = 0;
    std::string model;
  };
  std::optional<Running> running;
};

/// One desk's status: its summary, and for an assembled desk what it is up to.
struct DeskStatus {
  DeskSummary summary;
  std::string network;  ///< the sandbox's network: its mode, and the allowlist when it has one
  struct Schedule {
    std::string name;
    std::optional<std::string> next;  ///< its next firing, India time; none when it never fires
  };
  struct Details {
    std::string usage;
    std::vector<Schedule> schedules;
    std::size_t open_proposals = 0;
  };
  std::optional<Details> details;
};

/// The daemon's status: the time, whether it is stopping, and every desk.
struct DaemonStatus {
  std::string time;
  bool stopping = false;
  std::vector<DeskSummary> desks;
};

/// What a reload did, by desk name.
struct ReloadOutcome {
  std::vector<std::string> started, stopped, restarted, kept;
  std::map<std::string, std::string> failed;  ///< desk → why it could not start
};

}  // namespace deskd::control
