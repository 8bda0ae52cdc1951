#pragma once
// ControlService: what the control socket asks of the daemon. The server parses, checks
// peers and streams; the daemon (runner/app) answers with values, and the control-op table
// (control_ops.cpp) turns them into replies. Every method runs on the daemon's event loop
// thread.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/result.h"
#include "runner/control/control_values.h"
#include "runner/control/event_history.h"
#include "runner/desk/budget_keeper.h"
#include "runner/desk/desk_runtime.h"
#include "runner/events/event_bus.h"
#include "runner/tools/proposal_store.h"

namespace deskd::control {

class ControlService {
 public:
  virtual ~ControlService() = default;

  virtual bool has_desk(const std::string& name) const = 0;
  /// Every desk, in name order.
  virtual std::vector<DeskSummary> desks() const = 0;
  /// The daemon's status, with every desk's summary.
  virtual DaemonStatus daemon_status() const = 0;
  /// One desk's status.
  virtual Result<DeskStatus> status(const std::string& desk) const = 0;
  /// Submits a message or command from `sender`; `sent` gets the trigger id once the desk has
  /// it durably (journaled and flushed), or why it was refused, later, on the event loop.
  virtual void send(const std::string& desk, const std::string& text, const std::string& sender,
                    std::function<void(Result<std::string>)> sent) = 0;
  /// The desk's commands and skills, as its command menu lists them.
  virtual Result<std::vector<desk::CommandEntry>> commands(const std::string& desk) const = 0;
  /// The proposals of one desk (every desk's when empty), oldest first.
  virtual Result<std::vector<tools::Proposal>> proposals(const std::string& desk) const = 0;
  /// Accepts or rejects a proposal on behalf of `who`; refused (with a sentence) when the
  /// file changed since, the path is hidden, or the proposal is not open.
  virtual Result<tools::Proposal> decide(const std::string& proposal, bool accept, const std::string& who) = 0;
  /// The API calls waiting for approval on one desk (every desk's when empty), oldest first.
  virtual Result<std::vector<ApprovalSummary>> approvals(const std::string& desk) const = 0;
  /// Approves or denies the waiting API call `approval` on behalf of `who`; not_found (with
  /// a sentence) when no desk has it waiting (unknown, decided, or timed out).
  virtual Result<ApprovalSummary> decide_approval(const std::string& approval, bool approve,
                                                  const std::string& who) = 0;
  /// A desk's ledger lines at or after `since` (an ISO 8601 time or YYYY-MM-DD, India time;
  /// all when empty), at most kMaximumLedgerReplyBytes of the newest, and with `verify` what
  /// verifying its chain found. `done` gets it later, on the event loop (the files are read
  /// off it).
  virtual void ledger(const std::string& desk, const std::string& since, bool verify,
                      std::function<void(Result<LedgerReading>)> done) = 0;
  /// A desk's spend caps today, with what is spent, reserved and left; with `add_usd`, first
  /// raises today's dollar cap by it on behalf of `who` (for the rest of the India day, kept
  /// across a restart). Refused for a desk that is not running or has no daily_usd cap.
  virtual Result<desk::BudgetStatus> budget(const std::string& desk, std::optional<double> add_usd,
                                            const std::string& who) = 0;
  /// The usage of one desk (every desk's when empty) by India day, priced; not_found for a
  /// desk deskd does not have.
  virtual Result<std::vector<DeskSpend>> spend(const std::string& desk) const = 0;
  /// Reads the config again and applies it on behalf of `who`; `done` gets the outcome
  /// later, on the event loop (a reload waits for the turns of the desks it stops).
  virtual void reload(const std::string& who, std::function<void(Result<ReloadOutcome>)> done) = 0;
  /// Every metric of deskd in the Prometheus text format (what `/metrics` serves).
  virtual std::string metrics_text() = 0;
  /// A one-time login link for the web page's TCP listener (`deskctl web-url`); refused when
  /// deskd has no web_listen. Only the operator may ask: the op table lets only root and
  /// deskd's own uid reach it.
  virtual Result<WebLoginLink> web_url() = 0;
  /// A new subscription to every desk's events.
  virtual std::shared_ptr<desk::EventSubscription> subscribe() = 0;
  /// Kept events of `desk` (all desks when empty) after event number `after`, about
  /// `maximum_bytes` of them at most (at least one): a page of EventHistory::since.
  virtual EventHistory::Replay replay(const std::string& desk, std::optional<std::uint64_t> after,
                                      std::size_t maximum_bytes) const = 0;
};

}  // namespace deskd::control
