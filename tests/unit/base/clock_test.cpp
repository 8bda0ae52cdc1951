#include "base/clock.h"

#include <gtest/gtest.h>

namespace deskd {
namespace {

using std::chrono::hours;
using std::chrono::seconds;

TEST(ManualClockTest, MovesOnlyWhenTold) {
  const Clock::TimePoint start{seconds(1'700'000'000)};
  ManualClock clock(start);
  EXPECT_EQ(clock.now(), start);
  clock.advance(hours(2));
  EXPECT_EQ(clock.now(), start + hours(2));
  clock.set(start);
  EXPECT_EQ(clock.now(), start);
}

TEST(SystemClockTest, IsNearTheRealTime) {
  SystemClock clock;
  const auto difference = clock.now() - std::chrono::system_clock::now();
  EXPECT_LT(std::chrono::abs(difference), seconds(5));
}

}  // namespace
}  // namespace deskd
