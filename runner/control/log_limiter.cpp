#include "runner/control/log_limiter.h"


namespace deskd::control {

LogLimiter::LogLimiter(std::size_t lines_per_window, std::chrono::milliseconds window)
    : lines_per_window_(lines_per_window), window_(window) {}

LogLimiter::Verdict LogLimiter::admit(std::string_view key, TimePoint now) {
  auto found = windows_.find(key);
  if (found == windows_.end()) found = windows_.emplace(std::string(key), Window{now}).first;
  Window& window = found->second;
  Verdict verdict;
  if (now - window.start >= window_) {
    verdict.suppressed_before = window.suppressed;
    window = Window{now};
  }
  if (window.written < lines_per_window_) {
    ++window.written;
    verdict.write = true;
  } else {
    ++window.suppressed;
  }
  return verdict;
}

std::vector<LogLimiter::Summary> LogLimiter::take_summaries(TimePoint now) {
  std::vector<Summary> summaries;
  for (auto entry = windows_.begin(); entry != windows_.end();) {
    if (now - entry->second.start < window_) {
      ++entry;
      continue;
    }
    if (entry->second.suppressed > 0) summaries.push_back(Summary{entry->first, entry->second.suppressed});
    // A key whose window is over starts afresh at its next line: keys do not pile up.
    entry = windows_.erase(entry);
  }
  return summaries;
}

std::optional<LogLimiter::TimePoint> LogLimiter::next_summary_due() const {
  std::optional<TimePoint> due;
  for (const auto& [key, window] : windows_) {
    if (window.suppressed == 0) continue;
    const TimePoint end = window.start + window_;
    if (!due || end < *due) due = end;
  }
  return due;
}

std::string LogLimiter::summary_line(std::string_view key, std::uint64_t suppressed) {
  return "… suppressed " + std::to_string(suppressed) + " similar message" + (suppressed == 1 ? "" : "s") + " (" +
         std::string(key) + ")";
}

struct RateLimitedLog::State {
  State(boost::asio::any_io_executor executor, std::function<void(const std::string&)> write_, LogLimiter limiter_)
      : timer(std::move(executor)), write(std::move(write_)), limiter(std::move(limiter_)) {}
  boost::asio::steady_timer timer;
  std::function<void(const std::string&)> write;
  LogLimiter limiter;
  bool timer_armed = false;

  static void arm(const std::shared_ptr<State>& state) {
    if (state->timer_armed) return;
    const auto due = state->limiter.next_summary_due();
    if (!due) return;
    state->timer_armed = true;
    state->timer.expires_at(*due);
    state->timer.async_wait([weak = std::weak_ptr<State>(state)](const boost::system::error_code& error) {
      const auto alive = weak.lock();
      if (!alive) return;
      alive->timer_armed = false;
      if (error) return;
      alive->write_summaries(std::chrono::steady_clock::now());
      arm(alive);
    });
  }

  void write_summaries(LogLimiter::TimePoint now) {
    for (const auto& summary : limiter.take_summaries(now)) {
      if (write) write(LogLimiter::summary_line(summary.key, summary.suppressed));
    }
  }
};

RateLimitedLog::RateLimitedLog(boost::asio::any_io_executor executor, std::function<void(const std::string&)> write,
                               LogLimiter limiter)
    : state_(std::make_shared<State>(std::move(executor), std::move(write), std::move(limiter))) {}

RateLimitedLog::~RateLimitedLog() { state_->timer.cancel(); }

void RateLimitedLog::warn(std::string_view key, const std::string& line) {
  const auto verdict = state_->limiter.admit(key, std::chrono::steady_clock::now());
  if (verdict.write) {
    if (verdict.suppressed_before > 0 && state_->write) {
      state_->write(LogLimiter::summary_line(key, verdict.suppressed_before));
    }
    if (state_->write) state_->write(line);
  }
  arm_timer();
}

void RateLimitedLog::flush() {
  state_->write_summaries(LogLimiter::TimePoint::max());
}

// One timer for every key: it wakes when the earliest window with held-back lines ends,
// writes what is due, and sleeps again until the next such window ends.
void RateLimitedLog::arm_timer() { State::arm(state_); }

}  // namespace deskd::control
