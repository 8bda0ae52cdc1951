#pragma once
// An injectable clock, so that logic depending on time (days, schedules, timeouts) is
// tested without sleeping.

#include <chrono>
#include <mutex>

namespace deskd {

/// Tells the current wall-clock time.
class Clock {
 public:
  using TimePoint = std::chrono::system_clock::time_point;
  virtual ~Clock() = default;
  /// The current time.
  virtual TimePoint now() const = 0;
};

/// The real clock.
class SystemClock final : public Clock {
 public:
  TimePoint now() const override { return std::chrono::system_clock::now(); }
};

/// A clock that moves only when told to; safe to use from several threads.
class ManualClock final : public Clock {
 public:
  explicit ManualClock(TimePoint start) : now_(start) {}
  TimePoint now() const override;
  /// Moves the clock forward by `step`.
  void advance(std::chrono::nanoseconds step);
  /// Sets the clock to `time`.
  void set(TimePoint time);

 private:
  mutable std::mutex mutex_;
  TimePoint now_;
};

}  // namespace deskd
