#include "base/clock.h"

namespace deskd {

Clock::TimePoint ManualClock::now() const {
  std::lock_guard lock(mutex_);
  return now_;
}

void ManualClock::advance(std::chrono::nanoseconds step) {
  std::lock_guard lock(mutex_);
  now_ += std::chrono::duration_cast<std::chrono::system_clock::duration>(step);
}

void ManualClock::set(TimePoint time) {
  std::lock_guard lock(mutex_);
  now_ = time;
}

}  // namespace deskd
