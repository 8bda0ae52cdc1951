#include "runner/control/memory_release.h"

#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include <boost/asio/steady_timer.hpp>

namespace deskd::control {

void trim_free_memory() {
#if defined(__GLIBC__)
  (void)::malloc_trim(0);
#endif
}

struct MemoryReleaser::State {
  State(boost::asio::any_io_executor executor, std::size_t threshold_, std::chrono::milliseconds interval_)
      : timer(std::move(executor)), threshold(threshold_), interval(interval_) {}
  boost::asio::steady_timer timer;
  std::size_t threshold;
  std::chrono::milliseconds interval;
  std::size_t freed = 0;
  bool scheduled = false;
  std::chrono::steady_clock::time_point last_trim{};
  std::size_t trims = 0;
};

MemoryReleaser::MemoryReleaser(boost::asio::any_io_executor executor, std::size_t threshold,
                               std::chrono::milliseconds interval)
    : state_(std::make_shared<State>(std::move(executor), threshold, interval)) {}

MemoryReleaser::~MemoryReleaser() { state_->timer.cancel(); }

void MemoryReleaser::released(std::size_t bytes) {
  State& state = *state_;
  state.freed += bytes;
  if (state.freed < state.threshold || state.scheduled) return;
  state.scheduled = true;
  // Never before the handler that reported the bytes has freed them, never twice an interval.
  const auto now = std::chrono::steady_clock::now();
  state.timer.expires_at(std::max(now, state.last_trim + state.interval));
  state.timer.async_wait([weak = std::weak_ptr<State>(state_)](const boost::system::error_code& error) {
    const auto alive = weak.lock();
    if (!alive) return;
    alive->scheduled = false;
    if (error) return;
    trim_free_memory();
    alive->freed = 0;
    alive->last_trim = std::chrono::steady_clock::now();
    ++alive->trims;
  });
}

std::size_t MemoryReleaser::trims() const { return state_->trims; }

}  // namespace deskd::control
