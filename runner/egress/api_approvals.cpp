#include "runner/egress/api_approvals.h"

#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/system/system_error.hpp>

#include <algorithm>
#include <optional>

#include "base/asio_await.h"
#include "base/random_id.h"

namespace deskd::egress {

namespace asio = boost::asio;

struct ApprovalBoard::Waiting {
  PendingApproval request;
  /// Set once, by decide(), under the board's mutex.
  std::optional<ApprovalDecision> decision;
  /// The awaiting coroutine's executor and its timer: a timer is not thread-safe, so
  /// decide() cancels it by posting there.
  asio::any_io_executor executor;
  asio::steady_timer timer;

  Waiting(PendingApproval pending, asio::any_io_executor on, std::chrono::milliseconds timeout)
      : request(std::move(pending)), executor(on), timer(on, timeout) {}
};

namespace {

// Runs `leave` however the scope ends: ask() takes its request off the board so whether it
// was decided, timed out, or its coroutine cancelled or destroyed.
template <typename Leave>
class AtExit {
 public:
  explicit AtExit(Leave leave) : leave_(std::move(leave)) {}
  AtExit(const AtExit&) = delete;
  AtExit& operator=(const AtExit&) = delete;
  ~AtExit() { leave_(); }

 private:
  Leave leave_;
};

}  // namespace

asio::awaitable<Result<ApprovalDecision>> ApprovalBoard::ask(PendingApproval request, std::chrono::milliseconds timeout,
                                                             std::function<void(const PendingApproval&)> published) {
  const auto executor = co_await asio::this_coro::executor;
  request.id = "ap-" + random_hex(6);
  request.desk = desk_;
  if (request.asked_at == std::chrono::system_clock::time_point{}) request.asked_at = std::chrono::system_clock::now();
  request.expires_at = request.asked_at + timeout;
  auto entry = std::make_shared<Waiting>(std::move(request), executor, timeout);
  {
    const std::lock_guard lock(mutex_);
    if (waiting_.size() >= kMaximumPending) {
      co_return Error::refusal("Desk " + desk_ + " already has " + std::to_string(kMaximumPending) +
                               " API requests waiting for approval; this one is refused until some are decided.");
    }
    waiting_.push_back(entry);
  }
  const AtExit leave([this, held = entry.get()] {
    const std::lock_guard lock(mutex_);
    std::erase_if(waiting_, [&](const auto& waiting) { return waiting.get() == held; });
  });
  if (published) published(entry->request);
  // Woken by the timer's expiry (no decision: timed out) or by decide()'s cancel.
  (void)co_await entry->timer.async_wait(kAwait);
  {
    const std::lock_guard lock(mutex_);
    if (entry->decision) co_return *entry->decision;
    // Undecided: leaving the board now (under the lock) means a decide() from here on
    // finds nothing, so the person is never told "approved" for a request that timed out.
    std::erase_if(waiting_, [&](const auto& held) { return held == entry; });
  }
  const auto cancelled = (co_await asio::this_coro::cancellation_state).cancelled();
  if (cancelled != asio::cancellation_type::none) {
    throw boost::system::system_error(asio::error::operation_aborted, "the approval's wait was cancelled");
  }
  co_return ApprovalDecision{ApprovalOutcome::timed_out, ""};
}

std::vector<PendingApproval> ApprovalBoard::pending() const {
  const std::lock_guard lock(mutex_);
  std::vector<PendingApproval> list;
  for (const auto& entry : waiting_) {
    if (!entry->decision) list.push_back(entry->request);
  }
  return list;
}

Result<PendingApproval> ApprovalBoard::decide(const std::string& id, bool approve, const std::string& who) {
  std::shared_ptr<Waiting> entry;
  {
    const std::lock_guard lock(mutex_);
    const auto found = std::find_if(waiting_.begin(), waiting_.end(),
                                    [&](const auto& held) { return held->request.id == id && !held->decision; });
    if (found == waiting_.end()) {
      return Error::make(ErrorCode::not_found,
                         "There is no request " + id + " waiting for approval on desk " + desk_ + ".");
    }
    entry = *found;
    entry->decision = ApprovalDecision{approve ? ApprovalOutcome::approved : ApprovalOutcome::denied, who};
  }
  asio::post(entry->executor, [entry] { entry->timer.cancel(); });
  return entry->request;
}

}  // namespace deskd::egress
