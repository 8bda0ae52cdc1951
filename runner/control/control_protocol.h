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

/// The operations, for parsing and for `deskctl`'s messages.
namespace op {
inline constexpr std::string_view kDesks = "desks";
inline constexpr std::string_view kStatus = "status";
inline constexpr std::string_view kSend = "send";
inline constexpr std::string_view kFollow = "follow";
inline constexpr std::string_view kUnfollow = "unfollow";
inline constexpr std::string_view kCommands = "commands";
inline constexpr std::string_view kProposals = "proposals";
inline constexpr std::string_view kAccept = "accept";
inline constexpr std::string_view kReject = "reject";
inline constexpr std::string_view kReload = "reload";
}  // namespace op

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
inline constexpr std::string_view kTooSlow = "too_slow";    ///< the client let its unread replies pass its cap; it is dropped
inline constexpr std::string_view kTooManyClients = "too_many_clients";  ///< past [runner] max_clients or the per-uid cap
inline constexpr std::string_view kIdle = "idle";  ///< no complete request within the deadline; the connection closes
inline constexpr std::string_view kStopping = "stopping";  ///< deskd is shutting down
inline constexpr std::string_view kInternal = "internal";
}  // namespace code

struct ControlRequest {
  boost::json::value id;  ///< echoed; null when the line carried none
  std::string op;
  std::optional<std::string> desk;
  std::optional<std::string> text;
  std::optional<std::string> from;      ///< follow: replay kept events after this event id
  std::optional<std::string> proposal;  ///< accept/reject
  std::optional<boost::json::value> follow;  ///< unfollow: the follow request's id
  bool replay = false;                  ///< follow: replay every kept event first
};

/// A parsed line: the request, or the problem with it (and the id, when one was readable).
struct ParsedRequest {
  ControlRequest request;
  std::optional<std::string> problem;         ///< a sentence, when the line is not a request
  std::string problem_code = std::string(code::kBadRequest);
};

/// Parses one request line. Never throws.
ParsedRequest parse_control_request(std::string_view line);

/// One reply line (without the newline).
std::string reply_ok(const boost::json::value& id, boost::json::object fields = {});
std::string reply_error(const boost::json::value& id, std::string_view code, std::string_view message);
std::string reply_event(const boost::json::value& id, const boost::json::object& event);

}  // namespace deskd::control
