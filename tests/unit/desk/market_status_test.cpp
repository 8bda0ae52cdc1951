#include "runner/desk/market_status.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <fstream>

namespace deskd::desk {
namespace {

using namespace std::chrono_literals;
using std::chrono::year;

IndiaDate trading_date(int y, unsigned m, unsigned d) { return IndiaDate{year{y} / m / d}; }

// A moment as an India clock shows it.
TimePoint trading_ist(int y, unsigned m, unsigned d, int hour, int minute, int second = 0) {
  return india_time_point(trading_date(y, m, d), hour, minute, second);
}

// NSE's 2026 holidays the tests lean on: Republic Day falls on a Monday, Good Friday
// makes a long weekend, Independence Day falls on a Saturday.
MarketStatus nse_2026() {
  return MarketStatus({{trading_date(2026, 1, 26), "Republic Day"},
                       {trading_date(2026, 4, 3), "Good Friday"},
                       {trading_date(2026, 8, 15), "Independence Day"},
                       {trading_date(2026, 11, 10), ""}});
}

TEST(MarketStatusTest, PhasesThroughATradingDay) {
  const MarketStatus market = nse_2026();
  // Monday 30 November 2026.
  EXPECT_EQ(market.phase(trading_ist(2026, 11, 30, 0, 0)), MarketPhase::closed);
  EXPECT_EQ(market.phase(trading_ist(2026, 11, 30, 8, 59, 59)), MarketPhase::closed);
  EXPECT_EQ(market.phase(trading_ist(2026, 11, 30, 9, 0)), MarketPhase::pre_open);
  EXPECT_EQ(market.phase(trading_ist(2026, 11, 30, 9, 14, 59)), MarketPhase::pre_open);
  EXPECT_EQ(market.phase(trading_ist(2026, 11, 30, 9, 15)), MarketPhase::regular_session);
  EXPECT_EQ(market.phase(trading_ist(2026, 11, 30, 12, 0)), MarketPhase::regular_session);
  EXPECT_EQ(market.phase(trading_ist(2026, 11, 30, 15, 29, 59)), MarketPhase::regular_session);
  EXPECT_EQ(market.phase(trading_ist(2026, 11, 30, 15, 29, 59) + 999ms), MarketPhase::regular_session);
  EXPECT_EQ(market.phase(trading_ist(2026, 11, 30, 15, 30)), MarketPhase::closed);
  EXPECT_EQ(market.phase(trading_ist(2026, 11, 30, 23, 59, 59)), MarketPhase::closed);
}

TEST(MarketStatusTest, ClosedAtWeekendsAndOnHolidays) {
  const MarketStatus market = nse_2026();
  EXPECT_EQ(market.phase(trading_ist(2026, 11, 28, 10, 0)), MarketPhase::closed);  // Saturday
  EXPECT_EQ(market.phase(trading_ist(2026, 11, 29, 9, 5)), MarketPhase::closed);   // Sunday
  EXPECT_EQ(market.phase(trading_ist(2026, 1, 26, 10, 0)), MarketPhase::closed);   // Republic Day
  EXPECT_EQ(market.phase(trading_ist(2026, 1, 26, 9, 5)), MarketPhase::closed);
  EXPECT_EQ(market.phase(trading_ist(2026, 1, 27, 10, 0)), MarketPhase::regular_session);
  EXPECT_FALSE(market.is_trading_day(trading_date(2026, 4, 3)));
  EXPECT_TRUE(market.is_trading_day(trading_date(2026, 4, 2)));
  ASSERT_NE(market.holiday(trading_date(2026, 1, 26)), nullptr);
  EXPECT_EQ(*market.holiday(trading_date(2026, 1, 26)), "Republic Day");
  EXPECT_EQ(market.holiday(trading_date(2026, 11, 28)), nullptr);
}

TEST(MarketStatusTest, NextOpening) {
  const MarketStatus market = nse_2026();
  EXPECT_EQ(market.next_opening(trading_ist(2026, 11, 30, 8, 0)), trading_ist(2026, 11, 30, 9, 15));
  EXPECT_EQ(market.next_opening(trading_ist(2026, 11, 30, 9, 14, 59)), trading_ist(2026, 11, 30, 9, 15));
  // Once the session has begun, the next one is the next trading day's.
  EXPECT_EQ(market.next_opening(trading_ist(2026, 11, 30, 9, 15)), trading_ist(2026, 12, 1, 9, 15));
  EXPECT_EQ(market.next_opening(trading_ist(2026, 11, 30, 16, 0)), trading_ist(2026, 12, 1, 9, 15));
  // Friday evening and the weekend lead to Monday.
  EXPECT_EQ(market.next_opening(trading_ist(2026, 11, 27, 15, 30)), trading_ist(2026, 11, 30, 9, 15));
  EXPECT_EQ(market.next_opening(trading_ist(2026, 11, 29, 23, 59, 59)), trading_ist(2026, 11, 30, 9, 15));
  // Good Friday: from Thursday's close to Monday.
  EXPECT_EQ(market.next_opening(trading_ist(2026, 4, 2, 15, 45)), trading_ist(2026, 4, 6, 9, 15));
  // Republic Day on a Monday: from Friday's close to Tuesday.
  EXPECT_EQ(market.next_opening(trading_ist(2026, 1, 23, 15, 45)), trading_ist(2026, 1, 27, 9, 15));
  EXPECT_EQ(market.next_opening(trading_ist(2026, 1, 26, 8, 0)), trading_ist(2026, 1, 27, 9, 15));
}

TEST(MarketStatusTest, NextOpeningAcrossARunOfHolidays) {
  // A Thursday-to-Tuesday closure: two holidays, a weekend, and a Monday holiday.
  const MarketStatus market(
      {{trading_date(2026, 12, 3), "one"}, {trading_date(2026, 12, 4), "two"}, {trading_date(2026, 12, 7), "three"}});
  EXPECT_EQ(market.next_opening(trading_ist(2026, 12, 2, 16, 0)), trading_ist(2026, 12, 8, 9, 15));
}

TEST(MarketStatusTest, DescribesEachPhase) {
  const MarketStatus market = nse_2026();
  EXPECT_EQ(market.describe(trading_ist(2026, 11, 30, 10, 0)),
            "NSE: open (regular session until 15:30 IST)");
  EXPECT_EQ(market.describe(trading_ist(2026, 11, 30, 9, 0)), "NSE: pre-open until 09:15 IST");
  EXPECT_EQ(market.describe(trading_ist(2026, 11, 30, 8, 59, 59)),
            "NSE: closed; opens today at 09:00 IST (pre-open)");
  EXPECT_EQ(market.describe(trading_ist(2026, 11, 30, 15, 30)),
            "NSE: closed for the day; opens Tuesday 1 December at 09:15 IST");
  EXPECT_EQ(market.describe(trading_ist(2026, 11, 27, 18, 0)),
            "NSE: closed for the day; opens Monday 30 November at 09:15 IST");
  EXPECT_EQ(market.describe(trading_ist(2026, 11, 28, 11, 0)),
            "NSE: closed (weekend); opens Monday 30 November at 09:15 IST");
  EXPECT_EQ(market.describe(trading_ist(2026, 1, 26, 10, 0)),
            "NSE: closed (holiday: Republic Day); opens Tuesday 27 January at 09:15 IST");
  EXPECT_EQ(market.describe(trading_ist(2026, 4, 3, 8, 0)),
            "NSE: closed (holiday: Good Friday); opens Monday 6 April at 09:15 IST");
  EXPECT_EQ(market.describe(trading_ist(2026, 11, 10, 10, 0)),
            "NSE: closed (holiday); opens Wednesday 11 November at 09:15 IST");
  // A holiday on a Saturday is a weekend first.
  EXPECT_EQ(market.describe(trading_ist(2026, 8, 15, 10, 0)),
            "NSE: closed (weekend); opens Monday 17 August at 09:15 IST");
}

TEST(MarketStatusTest, WithoutHolidaysOnlyWeekendsClose) {
  const MarketStatus market;
  EXPECT_EQ(market.phase(trading_ist(2026, 1, 26, 10, 0)), MarketPhase::regular_session);
  EXPECT_EQ(market.phase(trading_ist(2026, 1, 24, 10, 0)), MarketPhase::closed);
}

TEST(MarketStatusTest, PhaseNames) {
  EXPECT_EQ(market_phase_name(MarketPhase::closed), "closed");
  EXPECT_EQ(market_phase_name(MarketPhase::pre_open), "pre-open");
  EXPECT_EQ(market_phase_name(MarketPhase::regular_session), "regular session");
}

TEST(MarketStatusParseTest, ReadsDatesNamesAndComments) {
  const auto parsed = MarketStatus::parse(
      "\xEF\xBB\xBF# NSE trading holidays 2026\n"
      "\n"
      "2026-01-26 Republic Day\r\n"
      "  2026-03-03\tHoli   # moved by circular\n"
      "2026-04-03\n"
      "2026-10-02 Mahatma Gandhi Jayanti",
      "holidays.txt");
  ASSERT_TRUE(parsed.ok()) << parsed.error().what;
  const MarketStatus::Holidays expected = {{trading_date(2026, 1, 26), "Republic Day"},
                                           {trading_date(2026, 3, 3), "Holi"},
                                           {trading_date(2026, 4, 3), ""},
                                           {trading_date(2026, 10, 2), "Mahatma Gandhi Jayanti"}};
  EXPECT_EQ(parsed->holidays(), expected);
}

TEST(MarketStatusParseTest, MalformedLinesNameFileAndLine) {
  const std::pair<const char*, const char*> cases[] = {
      {"# ok\n26-01-2026 Republic Day\n", "holidays.txt:2: expected a date as YYYY-MM-DD"},
      {"2026-01-26Republic Day\n", "holidays.txt:1: expected a date"},
      {"\n\n2026-02-30 Nothing\n", "holidays.txt:3: 2026-02-30 is not a day of the calendar."},
      {"2026-1-26\n", "holidays.txt:1: expected a date"},
      {"Republic Day\n", "holidays.txt:1: expected a date"},
      {"soon\n", "holidays.txt:1: expected a date"},
      {"2026-01-26 A\n2026-01-27 B\n2026-01-26 C\n",
       "holidays.txt:3: 2026-01-26 is already listed on line 1."},
  };
  for (const auto& [text, message] : cases) {
    const auto parsed = MarketStatus::parse(text, "holidays.txt");
    ASSERT_FALSE(parsed.ok()) << text;
    EXPECT_EQ(parsed.error().code, ErrorCode::invalid_argument);
    EXPECT_TRUE(parsed.error().what.starts_with(message)) << parsed.error().what;
  }
}

TEST(MarketStatusParseTest, AnEmptyFileHasNoHolidays) {
  const auto parsed = MarketStatus::parse("# none yet\n\n", "holidays.txt");
  ASSERT_TRUE(parsed.ok());
  EXPECT_TRUE(parsed->holidays().empty());
}

class MarketStatusFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (std::filesystem::temp_directory_path() / "deskd-market-XXXXXX").native();
    ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
    root_ = pattern;
  }
  void TearDown() override { std::filesystem::remove_all(root_); }
  std::filesystem::path root_;
};

TEST_F(MarketStatusFileTest, LoadsAFile) {
  std::ofstream(root_ / "holidays.txt") << "2026-01-26 Republic Day\n";
  const auto loaded = MarketStatus::load(root_ / "holidays.txt");
  ASSERT_TRUE(loaded.ok()) << loaded.error().what;
  EXPECT_EQ(loaded->phase(trading_ist(2026, 1, 26, 10, 0)), MarketPhase::closed);
}

TEST_F(MarketStatusFileTest, ErrorsNameThePath) {
  std::ofstream(root_ / "holidays.txt") << "2026-01-26 Republic Day\nsoon\n";
  const auto malformed = MarketStatus::load(root_ / "holidays.txt");
  ASSERT_FALSE(malformed.ok());
  EXPECT_TRUE(malformed.error().what.starts_with((root_ / "holidays.txt").native() + ":2: "))
      << malformed.error().what;

  const auto missing = MarketStatus::load(root_ / "absent.txt");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().code, ErrorCode::not_found);
  EXPECT_NE(missing.error().what.find("absent.txt"), std::string::npos);

  const auto folder = MarketStatus::load(root_);
  EXPECT_FALSE(folder.ok());
}

}  // namespace
}  // namespace deskd::desk
