// The rate limiter of repeated warnings: its logic with the time passed in, and on a real
// event loop with a short window.
#include "runner/control/log_limiter.h"

#include <gtest/gtest.h>

#include <boost/asio.hpp>

#include <string>
#include <vector>

namespace deskd::control {
namespace {

using namespace std::chrono_literals;
using TimePoint = LogLimiter::TimePoint;

TEST(LogLimiter, WritesAFewLinesPerWindowAndCountsTheRest) {
  LogLimiter limiter(3, 1000ms);
  const TimePoint start{};
  int written = 0;
  for (int index = 0; index < 1000; ++index) written += limiter.admit("refused peer", start + 1ms * (index % 100)).write;
  EXPECT_EQ(written, 3);
  EXPECT_EQ(limiter.next_summary_due(), start + 1000ms);
  EXPECT_TRUE(limiter.take_summaries(start + 999ms).empty());
  const auto summaries = limiter.take_summaries(start + 1000ms);
  ASSERT_EQ(summaries.size(), 1u);
  EXPECT_EQ(summaries[0].key, "refused peer");
  EXPECT_EQ(summaries[0].suppressed, 997u);
  EXPECT_FALSE(limiter.next_summary_due());
  // A fresh window writes again.
  EXPECT_TRUE(limiter.admit("refused peer", start + 1500ms).write);
}

TEST(LogLimiter, KeysAreLimitedApartAndTheNextWindowSaysWhatTheLastHeldBack) {
  LogLimiter limiter(1, 1000ms);
  const TimePoint start{};
  EXPECT_TRUE(limiter.admit("too slow", start).write);
  EXPECT_FALSE(limiter.admit("too slow", start + 1ms).write);
  EXPECT_FALSE(limiter.admit("too slow", start + 2ms).write);
  EXPECT_TRUE(limiter.admit("bad request", start + 3ms).write);
  const auto next = limiter.admit("too slow", start + 1200ms);
  EXPECT_TRUE(next.write);
  EXPECT_EQ(next.suppressed_before, 2u);
  EXPECT_FALSE(limiter.next_summary_due());  // reported with that line: nothing left to say
}

TEST(LogLimiter, SummaryLinesSayHowManyAndWhat) {
  EXPECT_EQ(LogLimiter::summary_line("refused peer", 9995), "… suppressed 9995 similar messages (refused peer)");
  EXPECT_EQ(LogLimiter::summary_line("too slow", 1), "… suppressed 1 similar message (too slow)");
}

TEST(RateLimitedLog, AFloodBecomesAFewLinesAndOneCountOnceTheWindowEnds) {
  boost::asio::io_context io;
  std::vector<std::string> lines;
  RateLimitedLog log(io.get_executor(), [&](const std::string& line) { lines.push_back(line); }, LogLimiter(5, 50ms));
  for (int index = 0; index < 10000; ++index) log.warn("refused peer", "refused a control connection from uid 4242");
  EXPECT_EQ(lines.size(), 5u);
  io.run_for(500ms);  // the timer writes the count, then there is nothing left to wait for
  ASSERT_EQ(lines.size(), 6u);
  EXPECT_EQ(lines.back(), "… suppressed 9995 similar messages (refused peer)");
}

TEST(RateLimitedLog, FlushWritesWhatIsHeldBack) {
  boost::asio::io_context io;
  std::vector<std::string> lines;
  RateLimitedLog log(io.get_executor(), [&](const std::string& line) { lines.push_back(line); }, LogLimiter(1, 10s));
  log.warn("accept failed", "one");
  log.warn("accept failed", "two");
  log.flush();
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[1], "… suppressed 1 similar message (accept failed)");
}

}  // namespace
}  // namespace deskd::control
