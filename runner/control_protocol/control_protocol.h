#pragma once
// The control socket's protocol: one JSON object a line each way. A request names an
// operation and carries an `id` that every reply to it echoes:
//   {"id": 7, "op": "send", "desk": "nifty", "text": "What is the plan?"}
//   {"id": 7, "ok": true, "trigger": "t-..."}
//   {"id": 8, "ok": false, "code": "unknown_desk", "error": "There is no desk 'nifyt'."}
// A follow request is answered once, then streams {"id": 9, "event": {...}} lines until
// the client sends {"op": "unfollow", "follow": 9} or goes away.

#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace deskd::control {

/// A request line longer than this is answered with an error, and the connection closed.
inline constexpr std::size_t kMaximumRequestBytes = std::size_t{1} << 20;

/// The longest text a `send` may carry: past it the send is refused (too_large) and the
/// connection stays. A message is read by a model whole; a long text belongs in a file the
/// desk can read. Every accepted message is copied into the journal, the events and the
/// desk's queue, so this cap is also what one request can make deskd hold.
inline constexpr std::size_t kMaximumSendTextBytes = std::size_t{256} << 10;

/// The request fields an operation needs (non-empty), as bits.
enum OpNeeds : unsigned {
  kNeedsNothing = 0,
  kNeedsDesk = 1,
  kNeedsText = 2,
  kNeedsProposal = 4,
  kNeedsFollow = 8,
  kNeedsApproval = 16
};

// clang-format off
/// Every operation: its constant, its name, the request fields it needs (the parser checks
/// them, so no handler has to). Both ends name an operation only by its constant. A new
/// operation is a row here, one in the server's table (runner/control/control_ops.cpp) and
/// one in deskctl's (runner/deskctl/deskctl_commands.cpp).
#define DESKD_CONTROL_OPERATIONS(OPERATION) \
  OPERATION(kDesks,     "desks",     kNeedsNothing) \
  OPERATION(kStatus,    "status",    kNeedsNothing)  /* every desk's without "desk" */ \
  OPERATION(kSend,      "send",      kNeedsDesk | kNeedsText) \
  OPERATION(kFollow,    "follow",    kNeedsNothing)  /* every desk's without "desk" */ \
  OPERATION(kUnfollow,  "unfollow",  kNeedsFollow) \
  OPERATION(kCommands,  "commands",  kNeedsDesk) \
  OPERATION(kProposals, "proposals", kNeedsNothing)  /* every desk's without "desk" */ \
  OPERATION(kAccept,    "accept",    kNeedsProposal) \
  OPERATION(kReject,    "reject",    kNeedsProposal) \
  OPERATION(kReload,    "reload",    kNeedsNothing) \
  OPERATION(kApprovals, "approvals", kNeedsNothing)  /* every desk's without "desk" */ \
  OPERATION(kApprove,   "approve",   kNeedsApproval) \
  OPERATION(kDeny,      "deny",      kNeedsApproval) \
  OPERATION(kLedger,    "ledger",    kNeedsDesk)     /* optional "since", "verify" */ \
  OPERATION(kBudget,    "budget",    kNeedsDesk)     /* optional "add_usd": raises today's cap */ \
  OPERATION(kRefusals,  "refusals",  kNeedsNothing)  /* every desk's without "desk" */ \
  OPERATION(kMetrics,   "metrics",   kNeedsNothing)  /* deskd's metrics, Prometheus text */ \
  OPERATION(kSpend,     "spend",     kNeedsNothing)  /* every desk's without "desk": usage by India day */ \
  OPERATION(kWebUrl,    "web_url",   kNeedsNothing)  /* root and deskd's uid only: a one-time login link */
// clang-format on

/// An operation of the protocol.
struct Operation {
  std::string_view name;
  unsigned needs;  ///< OpNeeds bits
};

/// The operations, by constant: op::kSend.name is "send".
namespace op {
#define DESKD_CONTROL_OPERATION_CONSTANT(constant, name, needs) inline constexpr Operation constant{name, needs};
DESKD_CONTROL_OPERATIONS(DESKD_CONTROL_OPERATION_CONSTANT)
#undef DESKD_CONTROL_OPERATION_CONSTANT
}  // namespace op

/// Every operation, in the table's order (the order the unknown-operation error lists them).
std::span<const Operation> operations();
/// The operation called `name`, or nullptr.
const Operation* find_operation(std::string_view name);

/// The names of a request's fields (and of a reply's envelope).
namespace field {
inline constexpr std::string_view kId = "id";  ///< any JSON value; every reply echoes it
inline constexpr std::string_view kOp = "op";
inline constexpr std::string_view kDesk = "desk";
inline constexpr std::string_view kText = "text";
inline constexpr std::string_view kFrom = "from";          ///< follow: an event id
inline constexpr std::string_view kReplay = "replay";      ///< follow: true or false
inline constexpr std::string_view kProposal = "proposal";  ///< accept, reject: a proposal id
inline constexpr std::string_view kFollow = "follow";      ///< unfollow: the follow request's id
inline constexpr std::string_view kApproval = "approval";  ///< approve, deny: an approval id ("ap-...")
inline constexpr std::string_view kSince = "since";        ///< ledger: an ISO 8601 time or YYYY-MM-DD (India)
inline constexpr std::string_view kVerify = "verify";      ///< ledger: true to verify the hash chain
inline constexpr std::string_view kAddUsd = "add_usd";     ///< budget: US dollars added to today's cap
inline constexpr std::string_view kOk = "ok";              ///< a reply: true, or false with code and error
inline constexpr std::string_view kCode = "code";
inline constexpr std::string_view kError = "error";
inline constexpr std::string_view kEvent = "event";  ///< a follow's streamed line
}  // namespace field

/// Error codes in replies.
namespace code {
inline constexpr std::string_view kBadRequest = "bad_request";
inline constexpr std::string_view kUnknownOperation = "unknown_operation";
inline constexpr std::string_view kUnknownDesk = "unknown_desk";
inline constexpr std::string_view kNotFound = "not_found";
inline constexpr std::string_view kRefused = "refused";
inline constexpr std::string_view kNotAllowed = "not_allowed";
inline constexpr std::string_view kTooLong = "too_long";    ///< a line past kMaximumRequestBytes; the connection closes
inline constexpr std::string_view kTooLarge = "too_large";  ///< a send's text past kMaximumSendTextBytes
inline constexpr std::string_view kTooSlow =
    "too_slow";  ///< the client let its unread replies pass its cap; it is dropped
inline constexpr std::string_view kTooManyClients =
    "too_many_clients";                            ///< past [runner] max_clients or the per-uid cap
inline constexpr std::string_view kIdle = "idle";  ///< no complete request within the deadline; the connection closes
inline constexpr std::string_view kStopping = "stopping";  ///< deskd is shutting down
inline constexpr std::string_view kInternal = "internal";
}  // namespace code

struct ControlRequest {
  boost::json::value id;  ///< echoed; null when the line carried none
  std::string op;
  std::optional<std::string> desk;
  std::optional<std::string> text;
  std::optional<std::string> from;           ///< follow: replay kept events after this event id
  std::optional<std::string> proposal;       ///< accept/reject
  std::optional<boost::json::value> follow;  ///< unfollow: the follow request's id
  bool replay = false;                       ///< follow: replay every kept event first
  std::optional<std::string> approval;       ///< approve/deny
  std::optional<std::string> since;          ///< ledger: only lines at or after this time
  bool verify = false;                       ///< ledger: verify the chain too
  std::optional<double> add_usd;             ///< budget: a positive amount, when raising
};

/// A parsed line: the request, or the problem with it (and the id, when one was readable).
struct ParsedRequest {
  ControlRequest request;
  std::optional<std::string> problem;  ///< a sentence, when the line is not a request
  std::string problem_code = std::string(code::kBadRequest);
};

/// Parses one request line: a JSON object naming an operation of the table, with the fields
/// that operation needs. Never throws.
ParsedRequest parse_control_request(std::string_view line);

/// One reply line (without the newline).
std::string reply_ok(const boost::json::value& id, boost::json::object fields = {});
std::string reply_error(const boost::json::value& id, std::string_view code, std::string_view message);
std::string reply_event(const boost::json::value& id, const boost::json::object& event);

}  // namespace deskd::control
