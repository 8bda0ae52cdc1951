#pragma once
// SteeringInbox: user messages that arrive while a turn runs wait here until the turn's
// next tool round picks them up. Whatever the turn never picked up (it ended, failed, was
// stopped or stalled) is handed back to the desk as queued triggers — never dropped.

#include <deque>
#include <mutex>
#include <vector>

#include "runner/desk/event_bus.h"
#include "runner/desk/trigger.h"

namespace deskd::desk {

class SteeringInbox {
 public:
  SteeringInbox(EventBus& bus, std::string desk) : bus_(bus), desk_(std::move(desk)) {}

  /// Leaves a message for the running turn (publishes STEERING_QUEUED). Thread-safe.
  void put(Trigger trigger);
  /// Takes every waiting message, oldest first (publishes STEERING_DELIVERED for each).
  std::vector<Trigger> take_all();
  /// Takes what was never delivered, without publishing STEERING_DELIVERED.
  std::vector<Trigger> take_undelivered();
  std::size_t size() const;

 private:
  EventBus& bus_;
  std::string desk_;
  mutable std::mutex mutex_;
  std::deque<Trigger> waiting_;
};

}  // namespace deskd::desk
