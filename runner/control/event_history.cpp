#include "runner/control/event_history.h"

#include <algorithm>
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
  const std::size_t bytes = desk::approximate_bytes(event);
  const std::uint64_t number = event_number(event.id).value_or(0);
  std::lock_guard lock(mutex_);
  while (!events_.empty() && (events_.size() >= capacity_ || kept_bytes_ + bytes > maximum_bytes_)) {
    dropped_up_to_ = std::max(dropped_up_to_, events_.front().number);
    kept_bytes_ -= events_.front().bytes;
    events_.pop_front();
  }
  events_.push_back(Kept{event, number, bytes});
  kept_bytes_ += bytes;
}

EventHistory::Replay EventHistory::since(const std::string& desk, std::optional<std::uint64_t> after,
                                         std::size_t maximum_bytes) const {
  std::lock_guard lock(mutex_);
  Replay replay;
  if (after && *after < dropped_up_to_) replay.complete = false;
  if (!after && dropped_up_to_ > 0) replay.complete = false;
  // The bus numbers events in the order it hands them to the sinks, so the kept ones are
  // sorted: a page starts without a walk over the history before it.
  auto kept = events_.begin();
  if (after) {
    kept = std::upper_bound(events_.begin(), events_.end(), *after,
                            [](std::uint64_t number, const Kept& entry) { return number < entry.number; });
  }
  std::size_t taken_bytes = 0;
  for (; kept != events_.end(); ++kept) {
    if (!desk.empty() && kept->event.desk != desk) continue;
    if (!replay.events.empty() && taken_bytes + kept->bytes > maximum_bytes) {
      replay.more = true;
      break;
    }
    replay.events.push_back(kept->event);
    taken_bytes += kept->bytes;
  }
  return replay;
}

std::size_t EventHistory::size() const {
  std::lock_guard lock(mutex_);
  return events_.size();
}

std::size_t EventHistory::bytes() const {
  std::lock_guard lock(mutex_);
  return kept_bytes_;
}

}  // namespace deskd::control
