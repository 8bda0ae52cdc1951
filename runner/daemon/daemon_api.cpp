// The daemon's answers about its desks' API gates: the calls waiting for approval (listed,
// approved, denied on behalf of the peer the control server names) and the ledgers, read and
// verified on a thread of their own.

#include <boost/asio/post.hpp>
#include <boost/asio/thread_pool.hpp>

#include <algorithm>

#include "runner/daemon/daemon.h"
#include "runner/daemon/daemon_slot.h"
#include "runner/daemon/desk_assembly.h"
#include "runner/egress/api_ledger.h"
#include "runner/events/india_time.h"

namespace deskd::app {

namespace asio = boost::asio;

namespace {

long long seconds_left(Clock::TimePoint expires_at, Clock::TimePoint now) {
  return std::max<long long>(0, std::chrono::duration_cast<std::chrono::seconds>(expires_at - now).count());
}

control::ApprovalSummary summary_of(const egress::PendingApproval& pending, Clock::TimePoint now) {
  control::ApprovalSummary summary;
  summary.id = pending.id;
  summary.desk = pending.desk;
  summary.api = pending.api;
  summary.method = pending.method;
  summary.url = pending.url;
  summary.summary = pending.summary;
  summary.sha256 = pending.sha256;
  summary.rule = pending.rule;
  summary.asked_at = desk::iso8601_india(pending.asked_at);
  summary.expires_at = desk::iso8601_india(pending.expires_at);
  summary.expires_in_seconds = seconds_left(pending.expires_at, now);
  return summary;
}

// `since` as deskctl ledger --since takes it: a day ("2026-12-01", from its start) or a time
// ("2026-12-01T09:15", "...:00", "...+05:30"), India time; "" is no bound.
Result<std::optional<Clock::TimePoint>> parse_since(const std::string& since) {
  if (since.empty()) return std::optional<Clock::TimePoint>{};
  const Error not_a_time =
      Error::make(ErrorCode::invalid_argument, "'" + since.substr(0, 60) +
                                                   "' is not a time: give a day (2026-12-01) or a time "
                                                   "(2026-12-01T09:15:00+05:30), India time.");
  const auto date = desk::parse_iso_date(std::string_view(since).substr(0, 10));
  if (!date) return not_a_time;
  if (since.size() == 10) return std::optional(desk::india_time_point(*date, 0, 0));
  std::string_view clock = std::string_view(since).substr(10);
  if (clock.ends_with("+05:30")) clock.remove_suffix(6);
  const bool shaped = (clock.size() == 6 || clock.size() == 9) && clock[0] == 'T' && clock[3] == ':' &&
                      (clock.size() == 6 || clock[6] == ':');
  const auto digits = [&](std::size_t at) -> int {
    const char high = clock[at], low = clock[at + 1];
    if (high < '0' || high > '9' || low < '0' || low > '9') return -1;
    return (high - '0') * 10 + (low - '0');
  };
  if (!shaped) return not_a_time;
  const int hour = digits(1), minute = digits(4), second = clock.size() == 9 ? digits(7) : 0;
  if (hour < 0 || hour > 23 || minute < 0 || minute > 59 || second < 0 || second > 59) return not_a_time;
  return std::optional(desk::india_time_point(*date, hour, minute, second));
}

}  // namespace

std::string describe_waiting_approvals(const std::vector<egress::PendingApproval>& waiting, Clock::TimePoint now) {
  if (waiting.empty()) return "No API calls wait for approval.";
  std::string text =
      std::to_string(waiting.size()) + " API call" + (waiting.size() == 1 ? "" : "s") + " wait for approval:";
  for (const auto& pending : waiting) {
    text += "\n" + pending.id + "  " + pending.api + "  " + pending.method + " " + pending.url + "  (expires in " +
            std::to_string(seconds_left(pending.expires_at, now)) + " s)";
    if (!pending.summary.empty()) text += "\n    " + pending.summary;
    text += "\n    deskctl approve " + pending.id + "  |  deskctl deny " + pending.id;
  }
  return text;
}

Result<std::vector<control::ApprovalSummary>> Daemon::approvals(const std::string& desk_name) const {
  if (!desk_name.empty() && !slots_.contains(desk_name)) return unknown_desk(desk_name);
  std::vector<control::ApprovalSummary> list;
  const auto now = clock_.now();
  for (const auto& [name, slot] : slots_) {
    if (!desk_name.empty() && name != desk_name) continue;
    if (!slot->desk || !slot->desk->approvals) continue;
    for (const auto& pending : slot->desk->approvals->pending()) list.push_back(summary_of(pending, now));
  }
  return list;
}

Result<control::ApprovalSummary> Daemon::decide_approval(const std::string& id, bool approve, const std::string& who) {
  std::optional<Error> refusal;
  std::size_t boards = 0;
  for (auto& [name, slot] : slots_) {
    if (!slot->desk || !slot->desk->approvals) continue;
    ++boards;
    auto decided = slot->desk->approvals->decide(id, approve, who);
    if (!decided.ok()) {
      refusal = std::move(decided).error();
      continue;
    }
    // The gate, woken, writes the decision to the ledger and publishes the call's outcome.
    log_.info("API call " + id + " of desk " + name + " (" + decided->method + " " + decided->url + ") " +
                  (approve ? "approved" : "denied") + " by " + who,
              about_desk(name));
    control::ApprovalSummary summary = summary_of(*decided, clock_.now());
    summary.decision = approve ? "approved" : "denied";
    summary.by = who;
    return summary;
  }
  // One desk's board says it in its words (naming the desk); among many, none had it.
  if (boards == 1 && refusal) return std::move(*refusal);
  return Error::make(ErrorCode::not_found, "There is no request " + id + " waiting for approval on any desk.");
}

void Daemon::ledger(const std::string& desk_name, const std::string& since, bool verify,
                    std::function<void(Result<control::LedgerReading>)> done) {
  if (!slots_.contains(desk_name)) return done(unknown_desk(desk_name));
  auto from = parse_since(since);
  if (!from.ok()) return done(std::move(from).error());
  if (!ledger_thread_) ledger_thread_ = std::make_unique<asio::thread_pool>(1);
  // Off the loop: a ledger kept for years is many files, and verifying reads every line.
  asio::post(*ledger_thread_, [folder = desk_state_folder(config_, desk_name), from = *from, verify,
                               executor = executor_, done = std::move(done)]() mutable {
    Result<control::LedgerReading> answer = [&]() -> Result<control::LedgerReading> {
      control::LedgerReading reading;
      DESKD_ASSIGN_OR_RETURN(reading.lines, egress::read_ledger(folder, from, control::kMaximumLedgerReplyBytes));
      if (verify) {
        DESKD_ASSIGN_OR_RETURN(egress::LedgerCheck check, egress::verify_ledger(folder));
        reading.verified = check.intact;
        reading.verified_lines = check.lines;
        reading.problem = check.problem;
      }
      return reading;
    }();
    asio::post(executor, [done = std::move(done), answer = std::move(answer)]() mutable { done(std::move(answer)); });
  });
}

}  // namespace deskd::app
