#pragma once
// LogLimiter: keeps a flood of alike warnings out of the log. Each kind of warning (its key:
// "refused peer", "too slow", ...) may write `lines_per_window` lines per window; the rest
// are counted, and the count is written once the window is over — "… suppressed 9995
// similar messages (refused peer)" — so the log still says how much happened. A refused
// peer once produced 10,001 warning lines in 0.15 s.
//
// LogLimiter is the pure logic, with the time passed in; RateLimitedLog puts it on an
// executor, with a timer that writes the counts when no later warning does.

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/steady_timer.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace deskd::control {

inline constexpr std::size_t kDefaultLinesPerWindow = 5;
inline constexpr std::chrono::milliseconds kDefaultLogWindow{1000};

class LogLimiter {
 public:
  using TimePoint = std::chrono::steady_clock::time_point;

  explicit LogLimiter(std::size_t lines_per_window = kDefaultLinesPerWindow,
                      std::chrono::milliseconds window = kDefaultLogWindow);

  struct Verdict {
    bool write = false;                ///< whether this line goes to the log
    std::uint64_t suppressed_before = 0;  ///< lines of the key held back in its last window; say so first
  };
  /// Whether a line of `key` may be written at `now`.
  Verdict admit(std::string_view key, TimePoint now);

  struct Summary {
    std::string key;
    std::uint64_t suppressed = 0;
  };
  /// The keys whose window ended by `now` with lines held back, and how many; forgets them.
  std::vector<Summary> take_summaries(TimePoint now);
  /// When the next window with lines held back ends; nullopt when nothing is held back.
  std::optional<TimePoint> next_summary_due() const;

  /// The line that reports `suppressed` held-back lines of `key`.
  static std::string summary_line(std::string_view key, std::uint64_t suppressed);

 private:
  struct Window {
    TimePoint start;
    std::size_t written = 0;
    std::uint64_t suppressed = 0;
  };
  std::size_t lines_per_window_;
  std::chrono::milliseconds window_;
  std::map<std::string, Window, std::less<>> windows_;
};

/// A LogLimiter in front of a warning function, on one executor (not thread-safe).
class RateLimitedLog {
 public:
  /// `write` may be empty: then nothing is written.
  RateLimitedLog(boost::asio::any_io_executor executor, std::function<void(const std::string&)> write,
                 LogLimiter limiter = LogLimiter());
  ~RateLimitedLog();
  RateLimitedLog(const RateLimitedLog&) = delete;
  RateLimitedLog& operator=(const RateLimitedLog&) = delete;

  /// Writes `line` unless lines of `key` are over their rate.
  void warn(std::string_view key, const std::string& line);
  /// Writes every count still held back (at shutdown).
  void flush();

 private:
  void arm_timer();

  struct State;
  std::shared_ptr<State> state_;
};

}  // namespace deskd::control
