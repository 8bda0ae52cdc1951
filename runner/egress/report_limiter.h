#pragma once
// At most N reports a minute: what the egress proxy (NETWORK_REFUSED) and the API gate
// (API_REFUSED) both need, so a desk looping on a refusal cannot flood the journal. The
// reports held back are counted and told with the next one let through. Thread-safe.

#include <chrono>
#include <cstdint>
#include <mutex>
#include <optional>

namespace deskd::egress {

class ReportLimiter {
 public:
  explicit ReportLimiter(std::uint64_t per_minute) : per_minute_(per_minute) {}

  /// nullopt: over the limit this minute (counted). Otherwise the report may go, and the
  /// value is how many were held back since the last one that went.
  std::optional<std::uint64_t> admit() {
    const std::lock_guard lock(mutex_);
    const auto now = std::chrono::steady_clock::now();
    if (now - window_start_ >= std::chrono::minutes(1)) {
      window_start_ = now;
      in_window_ = 0;
    }
    if (in_window_ >= per_minute_) {
      ++held_back_;
      return std::nullopt;
    }
    ++in_window_;
    const std::uint64_t held_back = held_back_;
    held_back_ = 0;
    return held_back;
  }

 private:
  const std::uint64_t per_minute_;
  std::mutex mutex_;
  std::chrono::steady_clock::time_point window_start_{};
  std::uint64_t in_window_ = 0;
  std::uint64_t held_back_ = 0;
};

}  // namespace deskd::egress
