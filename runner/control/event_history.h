#pragma once
// EventHistory: the daemon's most recent events, kept in memory so that a client can follow
// a desk "from event e-120" without missing what happened while it reconnected. A sink on
// the EventBus; bounded, oldest dropped first.

#include <cstddef>
#include <deque>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "runner/desk/event.h"

namespace deskd::control {

/// The number in an event id ("e-42" → 42); nullopt for anything else.
std::optional<std::uint64_t> event_number(std::string_view id);

class EventHistory {
 public:
  explicit EventHistory(std::size_t capacity = 10000) : capacity_(capacity) {}

  /// Keeps `event`; called by the bus under its lock, so it is quick.
  void add(const desk::Event& event);

  struct Replay {
    std::vector<desk::Event> events;  ///< after the given id, oldest first
    bool complete = true;  ///< false when events after the id were already dropped
  };
  /// The kept events of `desk` (every desk when empty) after event `after` (all kept ones
  /// when nullopt).
  Replay since(const std::string& desk, std::optional<std::uint64_t> after) const;

 private:
  std::size_t capacity_;
  mutable std::mutex mutex_;
  std::deque<desk::Event> events_;
  std::uint64_t dropped_up_to_ = 0;  // the highest event number no longer kept
};

}  // namespace deskd::control
