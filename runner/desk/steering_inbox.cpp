#include "runner/desk/steering_inbox.h"

#include <boost/json.hpp>

#include "runner/events/event_kinds.h"

namespace deskd::desk {
namespace {

boost::json::object describe(const Trigger& trigger) {
  return {{"trigger", trigger.id}, {"sender", trigger.sender}, {"text", trigger.text}};
}

}  // namespace

// Events are published with the inbox's lock held, so that STEERING_QUEUED and
// STEERING_DELIVERED appear in the order the messages really took. The lock order is
// inbox, then the desk's publish (journal, bus); neither reaches back into an inbox.

void SteeringInbox::put(Trigger trigger) {
  const std::lock_guard lock(mutex_);
  publish_(event_kind::kSteeringQueued, describe(trigger));
  waiting_.push_back(std::move(trigger));
}

std::vector<Trigger> SteeringInbox::take_all() {
  const std::lock_guard lock(mutex_);
  std::vector<Trigger> taken(std::make_move_iterator(waiting_.begin()),
                             std::make_move_iterator(waiting_.end()));
  waiting_.clear();
  for (const Trigger& trigger : taken) publish_(event_kind::kSteeringDelivered, describe(trigger));
  return taken;
}

std::vector<Trigger> SteeringInbox::take_undelivered() {
  const std::lock_guard lock(mutex_);
  std::vector<Trigger> taken(std::make_move_iterator(waiting_.begin()),
                             std::make_move_iterator(waiting_.end()));
  waiting_.clear();
  return taken;
}

std::size_t SteeringInbox::size() const {
  const std::lock_guard lock(mutex_);
  return waiting_.size();
}

}  // namespace deskd::desk
