#include "runner/control/event_history.h"

#include <charconv>

namespace deskd::control {

std::optional<std::uint64_t> event_number(std::string_view id) {
  if (!id.starts_with("e-") || id.size() == 2) return std::nullopt;
  std::uint64_t number = 0;
  const auto [end, error] = std::from_chars(id.data() + 2, id.data() + id.size(), number);
  if (error != std::errc{} || end != id.data() + id.size()) return std::nullopt;
  return number;
}

void EventHistory::add(const desk::Event& event) {
  std::lock_guard lock(mutex_);
  events_.push_back(event);
  while (events_.size() > capacity_) {
    dropped_up_to_ = event_number(events_.front().id).value_or(dropped_up_to_);
    events_.pop_front();
  }
}

EventHistory::Replay EventHistory::since(const std::string& desk, std::optional<std::uint64_t> after) const {
  std::lock_guard lock(mutex_);
  Replay replay;
  if (after && *after < dropped_up_to_) replay.complete = false;
  if (!after && dropped_up_to_ > 0) replay.complete = false;
  for (const auto& event : events_) {
    if (!desk.empty() && event.desk != desk) continue;
    if (after && event_number(event.id).value_or(0) <= *after) continue;
    replay.events.push_back(event);
  }
  return replay;
}

}  // namespace deskd::control
