#include "runner/events/event_kinds.h"

#include <algorithm>

namespace deskd::desk {

namespace {

// clang-format off
#define DESKD_EVENT_KIND_ROW(constant, name, journaling, log, ends, text, why_not) \
  EventKindInfo{name, Journaling::journaling, EventLogLevel::log, TurnEnd::ends, text, why_not},
constexpr EventKindInfo kEventKinds[] = {DESKD_EVENT_KINDS(DESKD_EVENT_KIND_ROW)};
#undef DESKD_EVENT_KIND_ROW
// clang-format on

}  // namespace

std::span<const EventKindInfo> event_kinds() { return kEventKinds; }

std::optional<EventKindInfo> find_event_kind(std::string_view name) {
  const auto* found = std::find_if(std::begin(kEventKinds), std::end(kEventKinds),
                                   [&](const EventKindInfo& row) { return row.name == name; });
  if (found == std::end(kEventKinds)) return std::nullopt;
  return *found;
}

Journaling journaling_of(std::string_view kind) {
  const auto row = find_event_kind(kind);
  return row ? row->journaling : Journaling::nobody;
}

TurnEnd turn_end_of(std::string_view kind) {
  const auto row = find_event_kind(kind);
  return row ? row->ends_turn : TurnEnd::no;
}

bool ends_turn(std::string_view kind, const boost::json::object& data) {
  switch (turn_end_of(kind)) {
    case TurnEnd::no: return false;
    case TurnEnd::yes: return true;
    case TurnEnd::unless_rollover: {
      const boost::json::value* rollover = data.if_contains("rollover");
      return rollover == nullptr || !rollover->is_bool() || !rollover->as_bool();
    }
  }
  return false;
}

}  // namespace deskd::desk
