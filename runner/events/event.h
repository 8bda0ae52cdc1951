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
#include "runner/events/event_kinds.h"  // the kinds, for every publisher

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

}  // namespace deskd::desk
