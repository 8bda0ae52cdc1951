#pragma once
// Event: one thing that happened on a desk, as the journal and the control socket carry
// it: {"id", "time", "desk", "kind", "data"}. Kinds are upper-case words.

#include <boost/json/object.hpp>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "base/result.h"

namespace deskd::desk {

struct Event {
  std::string id;    ///< "e-" + a number that grows, and goes on growing across restarts
  std::string time;  ///< ISO 8601 in India time, e.g. 2026-11-30T09:14:05+05:30
  std::string desk;
  std::string kind;  ///< DESK_STARTED, TRIGGER_QUEUED, TURN_STARTED, MODEL_TEXT, ...
  boost::json::object data;
};

/// The event as one JSON object, and back (as a journal line holds it); from_json refuses
/// missing or mistyped fields.
boost::json::object to_json(const Event& event);
Result<Event> event_from_json(const boost::json::object& object);

/// The number in an event id ("e-42" → 42); nullopt for anything else.
std::optional<std::uint64_t> event_sequence_number(std::string_view id);

/// About how many bytes of memory `event` holds (its strings and JSON, with a rough
/// allowance per node): what the in-memory queues of events count against their byte caps.
std::size_t approximate_bytes(const Event& event);

/// The kinds deskd publishes.
namespace event_kind {
inline constexpr const char* kDeskStarted = "DESK_STARTED";
inline constexpr const char* kDeskStopped = "DESK_STOPPED";
inline constexpr const char* kTriggerAccepted = "TRIGGER_ACCEPTED";  // journaled before acknowledging
inline constexpr const char* kTriggerQueued = "TRIGGER_QUEUED";
inline constexpr const char* kTriggerFinished = "TRIGGER_FINISHED";
inline constexpr const char* kTurnStarted = "TURN_STARTED";
inline constexpr const char* kModelText = "MODEL_TEXT";
inline constexpr const char* kToolCalled = "TOOL_CALLED";
inline constexpr const char* kToolFinished = "TOOL_FINISHED";
inline constexpr const char* kSteeringQueued = "STEERING_QUEUED";
inline constexpr const char* kSteeringDelivered = "STEERING_DELIVERED";
inline constexpr const char* kCommandAnswered = "COMMAND_ANSWERED";
inline constexpr const char* kTurnFinished = "TURN_FINISHED";
inline constexpr const char* kTurnFailed = "TURN_FAILED";
inline constexpr const char* kTurnStopped = "TURN_STOPPED";
inline constexpr const char* kSessionRolledOver = "SESSION_ROLLED_OVER";
// After a restart: a trigger run again, and why (data: trigger, reason).
inline constexpr const char* kTriggerRedelivered = "TRIGGER_REDELIVERED";
// A journal line that could not be read (data: file, line, error; trigger and recovered
// when something of it was saved).
inline constexpr const char* kJournalDamaged = "JOURNAL_DAMAGED";
// A line the journal could not take (data: event, kind, error, trigger when it names one).
inline constexpr const char* kJournalWriteFailed = "JOURNAL_WRITE_FAILED";
// The journal rewritten with only what a restart needs (data: file, bytes_before, ...).
inline constexpr const char* kJournalCompacted = "JOURNAL_COMPACTED";
// The desk's egress proxy refused a request (data: host, port, why; unreported_before when
// the rate limit held some back). Published by the proxy, journaled by the daemon.
inline constexpr const char* kNetworkRefused = "NETWORK_REFUSED";
}  // namespace event_kind

}  // namespace deskd::desk
