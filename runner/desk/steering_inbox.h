#pragma once
// SteeringInbox: user messages that arrive while a turn runs wait here until the turn's
// next tool round picks them up. Whatever the turn never picked up (it ended, failed, was
// stopped or stalled) is handed back to the desk as queued triggers — never dropped.

#include <boost/json/object.hpp>

#include <deque>
#include <functional>
#include <mutex>
#include <vector>

#include "runner/events/trigger.h"

namespace deskd::desk {

class SteeringInbox {
 public:
  /// How the inbox tells its events: the desk's publish, which journals them (recovery
  /// reads STEERING_DELIVERED back); called with the inbox's lock held, so it must not
  /// reach back into the inbox.
  using Publish = std::function<void(const char* kind, boost::json::object data)>;
  explicit SteeringInbox(Publish publish) : publish_(std::move(publish)) {}

  /// Leaves a message for the running turn (publishes STEERING_QUEUED). Thread-safe.
  void put(Trigger trigger);
  /// Takes every waiting message, oldest first (publishes STEERING_DELIVERED for each).
  std::vector<Trigger> take_all();
  /// Takes what was never delivered, without publishing STEERING_DELIVERED.
  std::vector<Trigger> take_undelivered();
  std::size_t size() const;

 private:
  Publish publish_;
  mutable std::mutex mutex_;
  std::deque<Trigger> waiting_;
};

}  // namespace deskd::desk
