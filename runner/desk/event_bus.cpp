#include "runner/desk/event_bus.h"

#include <algorithm>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/system/system_error.hpp>
#include <string>

#include "runner/desk/india_time.h"

namespace deskd::desk {

namespace asio = boost::asio;

// What a subscription and the bus share. The queue is guarded by `mutex` because publish()
// runs on any thread; the timer belongs to `executor` and is touched only there (Asio
// timers are not thread-safe), which is why publish() posts the wake-up instead of
// cancelling the timer itself. One next() at a time per subscription, on `executor` — a
// single-threaded io_context or a strand — so that a posted cancel cannot run between a
// waiter's "queue is empty" and its async_wait (that would be a lost wake-up).
struct EventSubscription::Shared {
  Shared(asio::any_io_executor waiting_executor, std::size_t maximum_events)
      : executor(std::move(waiting_executor)),
        timer(executor, asio::steady_timer::time_point::max()),
        capacity(std::max<std::size_t>(1, maximum_events)) {}

  // Precondition: `mutex` is held.
  void wake_waiter_locked(const std::shared_ptr<Shared>& self) {
    if (!waiting) return;
    waiting = false;
    // A weak pointer: the subscription may end before the posted cancel runs.
    asio::post(executor, [weak = std::weak_ptr<Shared>(self)] {
      if (const auto shared = weak.lock()) shared->timer.cancel();
    });
  }

  // Queues `event`; false when the subscription is closed, so that the bus forgets it.
  bool offer(const Event& event, const std::shared_ptr<Shared>& self) {
    const std::lock_guard lock(mutex);
    if (closed) return false;
    if (events.size() >= capacity) {
      // A follower that fell behind loses its oldest events: it is showing the past
      // anyway, and the newest events are the ones a person wants to see.
      events.pop_front();
      ++dropped;
    }
    events.push_back(event);
    wake_waiter_locked(self);
    return true;
  }

  asio::any_io_executor executor;
  asio::steady_timer timer;
  std::size_t capacity;
  std::mutex mutex;
  std::deque<Event> events;
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
      if (!shared->events.empty()) {
        Event event = std::move(shared->events.front());
        shared->events.pop_front();
        co_return event;
      }
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
  Event event = std::move(shared_->events.front());
  shared_->events.pop_front();
  return event;
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
  shared_->events.clear();
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

std::shared_ptr<EventSubscription> EventBus::subscribe(asio::any_io_executor executor,
                                                       std::size_t capacity) {
  auto subscription = std::make_shared<EventSubscription>();
  subscription->shared_ = std::make_shared<EventSubscription::Shared>(std::move(executor), capacity);
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
  std::erase_if(subscribers_, [&event](const std::weak_ptr<EventSubscription>& weak) {
    const auto subscription = weak.lock();
    return !subscription || !subscription->shared_->offer(event, subscription->shared_);
  });
  return event;
}

}  // namespace deskd::desk
