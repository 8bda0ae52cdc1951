#pragma once
// EventHistory: the daemon's most recent events, kept in memory so that a client can follow
// a desk "from event e-120" without missing what happened while it reconnected. A sink on
// the EventBus; bounded in events and in bytes, oldest dropped first.

#include <cstddef>
#include <cstdint>
#include <deque>
#include <limits>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "runner/events/event.h"

namespace deskd::control {

/// The number in an event id ("e-42" → 42); nullopt for anything else.
std::optional<std::uint64_t> event_number(std::string_view id);

/// The history's default caps: this many events, and about this many bytes of them
/// (desk::approximate_bytes), whichever is reached first.
inline constexpr std::size_t kDefaultHistoryEvents = 10000;
inline constexpr std::size_t kDefaultHistoryBytes = std::size_t{8} << 20;

class EventHistory {
 public:
  explicit EventHistory(std::size_t capacity = kDefaultHistoryEvents, std::size_t maximum_bytes = kDefaultHistoryBytes)
      : capacity_(capacity), maximum_bytes_(maximum_bytes) {}

  /// Keeps `event` (and always the newest one, however large); called by the bus under its
  /// lock, so it is quick.
  void add(const desk::Event& event);

  struct Replay {
    std::vector<desk::Event> events;  ///< after the given id, oldest first
    bool complete = true;  ///< false when events after the id were already dropped
    bool more = false;     ///< true when `maximum_bytes` cut the replay short: ask again after the last
  };
  /// The kept events of `desk` (every desk when empty) after event `after` (all kept ones
  /// when nullopt), up to about `maximum_bytes` of them (at least one).
  Replay since(const std::string& desk, std::optional<std::uint64_t> after,
               std::size_t maximum_bytes = std::numeric_limits<std::size_t>::max()) const;

  /// How many events and about how many bytes are kept.
  std::size_t size() const;
  std::size_t bytes() const;

 private:
  struct Kept {
    desk::Event event;
    std::uint64_t number;
    std::size_t bytes;
  };
  std::size_t capacity_;
  std::size_t maximum_bytes_;
  mutable std::mutex mutex_;
  std::deque<Kept> events_;
  std::size_t kept_bytes_ = 0;
  std::uint64_t dropped_up_to_ = 0;  // the highest event number no longer kept
};

}  // namespace deskd::control
