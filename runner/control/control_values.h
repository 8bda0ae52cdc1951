#pragma once
// What the daemon answers the control socket with, as values. The daemon fills them; the
// control-op table (control_ops.cpp) is the one place each becomes its reply's JSON.

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "runner/desk/usage_tracker.h"

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

/// A desk's API call held for a person's approval (egress::PendingApproval, in control's
/// own words: control does not link the gate), and once decided, the decision.
struct ApprovalSummary {
  std::string id;  ///< "ap-" and 12 hex digits
  std::string desk;
  std::string api;
  std::string method;
  std::string url;      ///< origin and path, with placeholders (never a key)
  std::string summary;  ///< the body's fields, readable
  std::string sha256;   ///< of the exact request: what approving lets through, once
  std::string rule;
  std::string asked_at;              ///< ISO 8601, India time
  std::string expires_at;            ///< ISO 8601, India time: denied then if undecided
  long long expires_in_seconds = 0;  ///< from the answer's time (0 when already past)
  std::string decision;              ///< approved or denied (approve, deny); "" while it waits
  std::string by;                    ///< who decided
};

/// The most of a desk's ledger one `ledger` reply carries: the newest lines that fit.
inline constexpr std::size_t kMaximumLedgerReplyBytes = std::size_t{4} << 20;

/// What `ledger` read: the lines (exact, newest last), and with verify, what verifying the
/// whole chain found.
struct LedgerReading {
  std::vector<std::string> lines;
  std::optional<bool> verified;      ///< set when asked to verify: whether the chain is intact
  std::uint64_t verified_lines = 0;  ///< how many lines the verified chain holds
  std::string problem;               ///< the first problem ("ledger.jsonl:17: ..."), when not intact
};

/// A one-time login link for deskd's web page over TCP (docs/WEB.md): the URL carries a
/// login code good for one login within `expires_in_seconds`, never the long-lived token.
struct WebLoginLink {
  std::string url;
  long long expires_in_seconds = 0;
};

/// A desk's usage by India day (`deskctl spend`, the web page's spend charts): its kept
/// days, oldest first, today last; none for a desk that is not running.
struct DeskSpend {
  std::string desk;
  bool running = false;
  std::vector<desk::DailyUsage> days;
};

/// What a reload did, by desk name.
struct ReloadOutcome {
  std::vector<std::string> started, stopped, restarted, kept;
  std::map<std::string, std::string> failed;  ///< desk → why it could not start
};

}  // namespace deskd::control
