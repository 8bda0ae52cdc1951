#include "runner/events/event_bus.h"

#include <algorithm>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/system/system_error.hpp>
#include <string>

#include "runner/events/india_time.h"

namespace deskd::desk {

namespace asio = boost::asio;

// What a subscription and the bus share. The queue is guarded by `mutex` because publish()
// runs on any thread; the timer belongs to `executor` and is touched only there (Asio
// timers are not thread-safe), which is why publish() posts the wake-up instead of
// cancelling the timer itself. One next() at a time per subscription, on `executor` — a
// single-threaded io_context or a strand — so that a posted cancel cannot run between a
// waiter's "queue is empty" and its async_wait (that would be a lost wake-up).
struct EventSubscription::Shared {
  Shared(asio::any_io_executor waiting_executor, std::size_t maximum_events, std::size_t maximum_byte_count)
      : executor(std::move(waiting_executor)),
        timer(executor, asio::steady_timer::time_point::max()),
        capacity(std::max<std::size_t>(1, maximum_events)),
        maximum_bytes(maximum_byte_count) {}

  // Precondition: `mutex` is held.
  void wake_waiter_locked(const std::shared_ptr<Shared>& self) {
    if (!waiting) return;
    waiting = false;
    // A weak pointer: the subscription may end before the posted cancel runs.
    asio::post(executor, [weak = std::weak_ptr<Shared>(self)] {
      if (const auto shared = weak.lock()) shared->timer.cancel();
    });
  }

  // Queues `event` (of `bytes`); false when the subscription is closed, so that the bus
  // forgets it.
  bool offer(const Event& event, std::size_t bytes, const std::shared_ptr<Shared>& self) {
    const std::lock_guard lock(mutex);
    if (closed) return false;
    // A follower that fell behind loses its oldest events: it is showing the past
    // anyway, and the newest events are the ones a person wants to see.
    while (!events.empty() && (events.size() >= capacity || queued_bytes + bytes > maximum_bytes)) {
      queued_bytes -= events.front().bytes;
      events.pop_front();
      ++dropped;
    }
    events.push_back(Queued{event, bytes});
    queued_bytes += bytes;
    wake_waiter_locked(self);
    return true;
  }

  // Precondition: `mutex` is held and `events` is not empty.
  Event take_front_locked() {
    Event event = std::move(events.front().event);
    queued_bytes -= events.front().bytes;
    events.pop_front();
    return event;
  }

  struct Queued {
    Event event;
    std::size_t bytes;
  };

  asio::any_io_executor executor;
  asio::steady_timer timer;
  std::size_t capacity;
  std::size_t maximum_bytes;
  std::mutex mutex;
  std::deque<Queued> events;
  std::size_t queued_bytes = 0;
  std::uint64_t dropped = 0;
  bool closed = false;
  bool waiting = false;  // a next() sleeps on the timer and wants to be woken
};

asio::awaitable<std::optional<Event>> EventSubscription::next() {
  // A copy, so the shared state outlives this wait even if the subscription is dropped.
  const std::shared_ptr<Shared> shared = shared_;
  if (!shared) co_return std::nullopt;
  // Whether the wait ends normally, by exception, or because its io_context is destroyed
  // with the coroutine in it, nobody must post to this executor on its behalf afterwards.
  struct WaitingReset {
    Shared& state;
    ~WaitingReset() {
      const std::lock_guard lock(state.mutex);
      state.waiting = false;
    }
  } waiting_reset{*shared};
  for (;;) {
    {
      const std::lock_guard lock(shared->mutex);
      if (shared->closed) co_return std::nullopt;
      if (!shared->events.empty()) co_return shared->take_front_locked();
      shared->waiting = true;
    }
    // The timer never expires: it ends only when cancelled, by a publish or close() (then
    // the loop looks again) or by the caller's cancellation (then this wait gives up).
    co_await shared->timer.async_wait(asio::as_tuple(asio::use_awaitable));
    const asio::cancellation_state state = co_await asio::this_coro::cancellation_state;
    if (state.cancelled() != asio::cancellation_type::none) {
      throw boost::system::system_error(asio::error::operation_aborted);
    }
  }
}

std::optional<Event> EventSubscription::try_next() {
  if (!shared_) return std::nullopt;
  const std::lock_guard lock(shared_->mutex);
  if (shared_->closed || shared_->events.empty()) return std::nullopt;
  return shared_->take_front_locked();
}

std::uint64_t EventSubscription::dropped() const {
  if (!shared_) return 0;
  const std::lock_guard lock(shared_->mutex);
  return shared_->dropped;
}

void EventSubscription::close() {
  if (!shared_) return;
  const std::lock_guard lock(shared_->mutex);
  shared_->closed = true;
  std::deque<Shared::Queued>().swap(shared_->events);
  shared_->queued_bytes = 0;
  shared_->wake_waiter_locked(shared_);
}

EventBus::EventBus(const Clock& clock) : clock_(clock) {}

EventBus::~EventBus() {
  // Followers still waiting would otherwise wait for events that can no longer come.
  for (const auto& weak : subscribers_) {
    if (const auto subscription = weak.lock()) subscription->close();
  }
}

void EventBus::add_sink(Sink sink) {
  const std::lock_guard lock(mutex_);
  sinks_.push_back(std::move(sink));
}

std::shared_ptr<EventSubscription> EventBus::subscribe(asio::any_io_executor executor, std::size_t capacity,
                                                       std::size_t maximum_bytes) {
  auto subscription = std::make_shared<EventSubscription>();
  subscription->shared_ = std::make_shared<EventSubscription::Shared>(std::move(executor), capacity, maximum_bytes);
  const std::lock_guard lock(mutex_);
  // Pruned here too, so a bus that sees many short-lived followers and few events stays small.
  std::erase_if(subscribers_, [](const auto& weak) { return weak.expired(); });
  subscribers_.push_back(subscription);
  return subscription;
}

void EventBus::continue_numbering_after(std::uint64_t number) {
  const std::lock_guard lock(mutex_);
  next_id_ = std::max(next_id_, number + 1);
}

Event EventBus::publish(std::string desk, std::string kind, boost::json::object data) {
  Event event{.id = {}, .time = {}, .desk = std::move(desk), .kind = std::move(kind), .data = std::move(data)};
  // One lock around numbering, sinks and queues: every sink and every subscriber sees the
  // events in the order of their ids, whichever threads published them.
  const std::lock_guard lock(mutex_);
  event.id = "e-" + std::to_string(next_id_++);
  event.time = iso8601_india(clock_.now());
  for (const Sink& sink : sinks_) sink(event);
  const std::size_t bytes = approximate_bytes(event);
  std::erase_if(subscribers_, [&event, bytes](const std::weak_ptr<EventSubscription>& weak) {
    const auto subscription = weak.lock();
    return !subscription || !subscription->shared_->offer(event, bytes, subscription->shared_);
  });
  return event;
}

}  // namespace deskd::desk
