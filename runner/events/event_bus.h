#pragma once
// EventBus: where desks publish their events. Sinks (the journal) are called in line and
// must be quick; subscribers (a deskctl following a desk) each get a queue bounded in events
// and in bytes, so a slow subscriber loses its oldest events — counted — and never blocks a
// desk nor holds more than its byte cap of memory.

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "base/clock.h"
#include "runner/events/event.h"

namespace deskd::desk {

class EventBus;

/// A subscription's default caps: this many events, and about this many bytes of them
/// (approximate_bytes), whichever is reached first.
inline constexpr std::size_t kDefaultSubscriptionEvents = 4096;
inline constexpr std::size_t kDefaultSubscriptionBytes = std::size_t{4} << 20;

/// One subscriber's queue of events.
class EventSubscription {
 public:
  /// The next event, waiting for one; nullopt once the subscription is closed.
  boost::asio::awaitable<std::optional<Event>> next();
  /// The next event if one is waiting.
  std::optional<Event> try_next();
  /// How many events were dropped because this subscriber fell behind.
  std::uint64_t dropped() const;
  /// Ends the subscription; a waiting next() returns nullopt.
  void close();

 private:
  friend class EventBus;
  struct Shared;
  std::shared_ptr<Shared> shared_;
};

class EventBus {
 public:
  explicit EventBus(const Clock& clock);
  ~EventBus();

  using Sink = std::function<void(const Event&)>;
  /// Adds a sink, called in line (under the bus's lock) for every event. Must not block.
  void add_sink(Sink sink);
  /// A new subscriber whose waits run on `executor`; keeps at most `capacity` events and
  /// about `maximum_bytes` of them (always the newest one, however large).
  std::shared_ptr<EventSubscription> subscribe(boost::asio::any_io_executor executor,
                                               std::size_t capacity = kDefaultSubscriptionEvents,
                                               std::size_t maximum_bytes = kDefaultSubscriptionBytes);
  /// Publishes an event; safe from any thread. Returns it as published.
  Event publish(std::string desk, std::string kind, boost::json::object data = {});
  /// Numbers the next events after `number` (never lower than now): a restarted daemon
  /// goes on from its journals' last id, so that "events after e-22" keeps its meaning.
  void continue_numbering_after(std::uint64_t number);

 private:
  friend class EventBusTestPeer;  // counts live subscribers, to test pruning
  const Clock& clock_;
  std::mutex mutex_;
  std::uint64_t next_id_ = 1;
  std::vector<Sink> sinks_;
  std::vector<std::weak_ptr<EventSubscription>> subscribers_;
};

}  // namespace deskd::desk
