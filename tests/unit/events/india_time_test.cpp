#include "runner/events/india_time.h"

#include <gtest/gtest.h>

namespace deskd::desk {
namespace {

using namespace std::chrono_literals;
using std::chrono::sys_days;
using std::chrono::year;

// A moment given in UTC, as the tests reason about the 18:30 UTC edge.
TimePoint utc(int y, unsigned m, unsigned d, int hour = 0, int minute = 0, int second = 0) {
  return sys_days{year{y} / m / d} + std::chrono::hours{hour} + std::chrono::minutes{minute} +
         std::chrono::seconds{second};
}

IndiaDate date(int y, unsigned m, unsigned d) { return IndiaDate{year{y} / m / d}; }

TEST(IndiaTimeTest, FieldsOfAMoment) {
  const IndiaTime india = india_time(utc(2026, 11, 30, 3, 44, 5));
  EXPECT_EQ(india.year, 2026);
  EXPECT_EQ(india.month, 11u);
  EXPECT_EQ(india.day, 30u);
  EXPECT_EQ(india.hour, 9);
  EXPECT_EQ(india.minute, 14);
  EXPECT_EQ(india.second, 5);
  EXPECT_EQ(india.weekday, std::chrono::Monday);
  EXPECT_EQ(india.date(), date(2026, 11, 30));
}

TEST(IndiaTimeTest, FormatsForPeopleAndMachines) {
  const TimePoint moment = utc(2026, 11, 30, 3, 44, 5);
  EXPECT_EQ(format_india_time(moment), "Monday 30 November 2026, 09:14:05 IST");
  EXPECT_EQ(iso8601_india(moment), "2026-11-30T09:14:05+05:30");
  EXPECT_EQ(format_india_time(utc(2026, 11, 30, 18, 30)), "Tuesday 1 December 2026, 00:00:00 IST");
  EXPECT_EQ(format_india_day(date(2026, 12, 1)), "Tuesday 1 December");
}

// What deskctl prints of a time the socket sent: the zone stays on it.
TEST(IndiaTimeTest, ATimeForPeopleCarriesItsZone) {
  EXPECT_EQ(readable_india_time("2026-12-04T09:15:00+05:30"), "2026-12-04 09:15:00 IST");
  EXPECT_EQ(readable_india_clock("2026-12-04T09:15:00+05:30"), "09:15:00 IST");
  // Not India time as deskd writes it: shown as it is, so its own zone is not lost.
  for (const char* other : {"2026-12-04T03:45:00Z", "2026-12-04T09:15:00+05:45", "2026-12-04T09:15:00.5+05:30",
                            "2026-12-04 09:15:00", "soon", ""}) {
    EXPECT_EQ(readable_india_time(other), other);
    EXPECT_EQ(readable_india_clock(other), other);
  }
}

TEST(IndiaTimeTest, TheDayChangesAt1830Utc) {
  const TimePoint last_second = utc(2026, 11, 29, 18, 29, 59);
  const TimePoint midnight = utc(2026, 11, 29, 18, 30, 0);
  EXPECT_EQ(format_india_time(last_second), "Sunday 29 November 2026, 23:59:59 IST");
  EXPECT_EQ(format_india_time(midnight), "Monday 30 November 2026, 00:00:00 IST");
  EXPECT_EQ(india_date(last_second), date(2026, 11, 29));
  EXPECT_EQ(india_date(midnight), date(2026, 11, 30));
  EXPECT_LT(india_date(last_second), india_date(midnight));
  // Part of a second does not move the day early.
  EXPECT_EQ(india_date(last_second + 999ms), date(2026, 11, 29));
  EXPECT_EQ(iso8601_india(last_second + 999ms), "2026-11-29T23:59:59+05:30");
}

TEST(IndiaTimeTest, StartOfTheIndiaDay) {
  const TimePoint midnight = utc(2026, 11, 29, 18, 30);
  EXPECT_EQ(start_of_india_day(midnight), midnight);
  EXPECT_EQ(start_of_india_day(midnight + 23h + 59min + 59s), midnight);
  EXPECT_EQ(start_of_india_day(midnight - 1s), midnight - 24h);
  // Noon UTC is already evening in India: the India day began at 18:30 UTC the day before.
  EXPECT_EQ(start_of_india_day(utc(2026, 11, 30, 12)), midnight);
}

TEST(IndiaTimeTest, TimePointOfAnIndiaClockReading) {
  EXPECT_EQ(india_time_point(date(2026, 11, 30), 9, 15), utc(2026, 11, 30, 3, 45));
  EXPECT_EQ(india_time_point(date(2026, 11, 30), 0, 0), utc(2026, 11, 29, 18, 30));
  EXPECT_EQ(india_time_point(date(2026, 11, 30), 23, 59, 59), utc(2026, 11, 30, 18, 29, 59));
  EXPECT_EQ(india_time(india_time_point(date(2028, 2, 29), 12, 34, 56)).date(), date(2028, 2, 29));
}

TEST(IndiaTimeTest, WeekdayNamesThroughAWeek) {
  const char* const expected[] = {"Monday", "Tuesday",  "Wednesday", "Thursday",
                                  "Friday", "Saturday", "Sunday"};
  for (int offset = 0; offset < 7; ++offset) {
    const TimePoint moment = utc(2026, 11, 30, 6) + std::chrono::days{offset};
    EXPECT_EQ(weekday_name(india_time(moment).weekday), expected[offset]) << offset;
    EXPECT_TRUE(format_india_time(moment).starts_with(expected[offset]));
  }
}

TEST(IndiaTimeTest, MonthNames) {
  EXPECT_EQ(month_name(1), "January");
  EXPECT_EQ(month_name(12), "December");
  EXPECT_EQ(month_name(0), "");
  EXPECT_EQ(month_name(13), "");
}

TEST(IndiaTimeTest, YearEndAndLeapDay) {
  EXPECT_EQ(format_india_time(utc(2026, 12, 31, 18, 30)), "Friday 1 January 2027, 00:00:00 IST");
  EXPECT_EQ(format_india_time(utc(2026, 12, 31, 18, 29, 59)),
            "Thursday 31 December 2026, 23:59:59 IST");
  EXPECT_EQ(format_india_time(utc(2028, 2, 28, 18, 30)), "Tuesday 29 February 2028, 00:00:00 IST");
}

TEST(IndiaTimeTest, MomentsBeforeTheEpoch) {
  EXPECT_EQ(iso8601_india(utc(1970, 1, 1)), "1970-01-01T05:30:00+05:30");
  EXPECT_EQ(iso8601_india(utc(1969, 12, 31, 18, 30)), "1970-01-01T00:00:00+05:30");
  // Flooring, not truncation toward zero: half a second before is still the old day.
  EXPECT_EQ(iso8601_india(utc(1969, 12, 31, 18, 30) - 500ms), "1969-12-31T23:59:59+05:30");
  EXPECT_EQ(format_india_time(utc(1969, 12, 31, 18, 29, 59)),
            "Wednesday 31 December 1969, 23:59:59 IST");
}

TEST(IndiaTimeTest, IsoDates) {
  EXPECT_EQ(iso_date(date(2026, 1, 5)), "2026-01-05");
  EXPECT_EQ(parse_iso_date("2026-01-26"), date(2026, 1, 26));
  EXPECT_EQ(parse_iso_date("2028-02-29"), date(2028, 2, 29));
  for (const char* bad :
       {"2026-02-29", "2026-04-31", "2026-13-01", "2026-00-10", "2026-01-00", "2026-1-05",
        "2026-01-5", "2026-01-050", "26-01-2026", "abcd-01-01", "2026/01/26", "", " 2026-01-26"}) {
    EXPECT_FALSE(parse_iso_date(bad).has_value()) << bad;
  }
}

}  // namespace
}  // namespace deskd::desk
