#pragma once
// The requests of one desk's API gate held for a person's decision (an `ask` rule). Each is
// bound to the SHA-256 of the exact request: approving it lets that request through once,
// and nothing else. An unanswered request is denied when its time is up.

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>

#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "base/result.h"

namespace deskd::egress {

struct PendingApproval {
  std::string id;  ///< "ap-" and 12 hex digits
  std::string desk;
  std::string api;
  std::string method;
  std::string url;      ///< origin and path, with placeholders (never a key)
  std::string summary;  ///< the body's fields, readable (summarise_api_body)
  std::string sha256;   ///< of the exact request
  std::string rule;
  std::chrono::system_clock::time_point asked_at;
  std::chrono::system_clock::time_point expires_at;
};

enum class ApprovalOutcome { approved, denied, timed_out };

struct ApprovalDecision {
  ApprovalOutcome outcome = ApprovalOutcome::timed_out;
  std::string who;  ///< who approved or denied; "" when timed out
};

/// Thread-safe: the gate waits on its executor, decide() comes from the control socket's.
class ApprovalBoard : public std::enable_shared_from_this<ApprovalBoard> {
 public:
  /// At most this many requests wait at once; one more is refused at once.
  static constexpr std::size_t kMaximumPending = 64;

  explicit ApprovalBoard(std::string desk) : desk_(std::move(desk)) {}

  /// Holds `request` (its id and desk are set here, its expires_at to asked_at + `timeout`;
  /// asked_at is now when not given) until decided or `timeout`; `published` is called with
  /// it once it is on the board (before any wait). Refused at once when kMaximumPending
  /// wait. Cancellation of the awaiting coroutine takes it off the board (and is rethrown).
  boost::asio::awaitable<Result<ApprovalDecision>> ask(PendingApproval request, std::chrono::milliseconds timeout,
                                                       std::function<void(const PendingApproval&)> published);
  /// The requests waiting now, oldest first.
  std::vector<PendingApproval> pending() const;
  /// Approves or denies the waiting request `id`; an error sentence when there is none.
  Result<PendingApproval> decide(const std::string& id, bool approve, const std::string& who);

  const std::string& desk() const { return desk_; }

 private:
  struct Waiting;
  std::string desk_;
  mutable std::mutex mutex_;
  std::vector<std::shared_ptr<Waiting>> waiting_;
};

}  // namespace deskd::egress
