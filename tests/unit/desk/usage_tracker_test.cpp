#include "runner/desk/usage_tracker.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/json.hpp>
#include <fstream>
#include <sstream>
#include <thread>
#include <vector>

namespace deskd::desk {
namespace {

using namespace std::chrono_literals;
using std::chrono::year;

TimePoint usage_ist(int y, unsigned m, unsigned d, int hour, int minute, int second = 0) {
  return india_time_point(IndiaDate{year{y} / m / d}, hour, minute, second);
}

const PriceTable kUsagePrices = {
    {"model-a", ModelPrice{3.0, 15.0, 0.3, 3.75}},
    {"model-b", ModelPrice{1.0, 2.0, 0.0, 0.0}},
};

class UsageTrackerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (std::filesystem::temp_directory_path() / "deskd-usage-XXXXXX").native();
    ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
    root_ = pattern;
  }
  void TearDown() override { std::filesystem::remove_all(root_); }

  std::filesystem::path file() const { return root_ / "usage.json"; }
  UsageTracker tracker() const { return UsageTracker(clock_, file(), kUsagePrices); }
  void write(const std::string& text) const { std::ofstream(file()) << text; }
  std::string read() const {
    std::ostringstream text;
    text << std::ifstream(file()).rdbuf();
    return text.str();
  }

  std::filesystem::path root_;
  ManualClock clock_{usage_ist(2026, 11, 30, 10, 0)};
};

TEST_F(UsageTrackerTest, AddsUpEachModelsRequests) {
  UsageTracker usage = tracker();
  ASSERT_TRUE(usage.record("model-a", Usage{1'000'000, 100'000, 2'000'000, 0}).ok());
  ASSERT_TRUE(usage.record("model-a", Usage{500'000, 0, 0, 400'000}).ok());
  ASSERT_TRUE(usage.record("mystery", Usage{10, 20, 0, 0}).ok());
  const DailyUsage today = usage.today();
  EXPECT_EQ(today.date, india_date(clock_.now()));
  ASSERT_EQ(today.models.size(), 2u);
  const ModelUsage& a = today.models.at("model-a");
  EXPECT_EQ(a.requests, 2u);
  EXPECT_EQ(a.tokens, (Usage{1'500'000, 100'000, 2'000'000, 400'000}));
  ASSERT_TRUE(a.cost_usd.has_value());
  // 1.5 M in at $3, 0.1 M out at $15, 2 M cache read at $0.30, 0.4 M cache write at $3.75.
  EXPECT_NEAR(*a.cost_usd, 4.5 + 1.5 + 0.6 + 1.5, 1e-9);
  const ModelUsage& mystery = today.models.at("mystery");
  EXPECT_EQ(mystery.requests, 1u);
  EXPECT_FALSE(mystery.cost_usd.has_value());
}

TEST_F(UsageTrackerTest, CostOf) {
  EXPECT_DOUBLE_EQ(cost_of(Usage{2'000'000, 1'000'000, 0, 0}, ModelPrice{1, 2, 0, 0}), 4.0);
  EXPECT_DOUBLE_EQ(cost_of(Usage{}, ModelPrice{1, 2, 3, 4}), 0.0);
}

TEST_F(UsageTrackerTest, StartsAfreshAtIndiaMidnight) {
  clock_.set(usage_ist(2026, 11, 30, 23, 59, 59));
  UsageTracker usage = tracker();
  ASSERT_TRUE(usage.record("model-a", Usage{100, 10, 0, 0}).ok());
  EXPECT_EQ(usage.today().models.size(), 1u);
  clock_.advance(1s);  // 18:30:00 UTC
  const DailyUsage tomorrow = usage.today();
  EXPECT_EQ(tomorrow.date, (IndiaDate{year{2026} / 12 / 1}));
  EXPECT_TRUE(tomorrow.models.empty());
  ASSERT_TRUE(usage.record("model-b", Usage{5, 5, 0, 0}).ok());
  const DailyUsage after = usage.today();
  ASSERT_EQ(after.models.size(), 1u);
  EXPECT_EQ(after.models.at("model-b").requests, 1u);
}

TEST_F(UsageTrackerTest, RecordingAfterMidnightDropsYesterdayWithoutAskingFirst) {
  UsageTracker usage = tracker();
  ASSERT_TRUE(usage.record("model-a", Usage{100, 10, 0, 0}).ok());
  clock_.set(usage_ist(2026, 12, 1, 0, 0));
  ASSERT_TRUE(usage.record("model-a", Usage{1, 1, 0, 0}).ok());
  EXPECT_EQ(usage.today().models.at("model-a").tokens, (Usage{1, 1, 0, 0}));
}

TEST_F(UsageTrackerTest, SurvivesARestart) {
  {
    UsageTracker usage = tracker();
    ASSERT_TRUE(usage.load().ok());
    ASSERT_TRUE(usage.record("model-a", Usage{1, 2, 3, 4}).ok());
    ASSERT_TRUE(usage.record("model-b", Usage{5, 6, 7, 8}).ok());
  }
  clock_.advance(3h);
  UsageTracker restarted = tracker();
  const auto loaded = restarted.load();
  ASSERT_TRUE(loaded.ok()) << loaded.error().what;
  const DailyUsage today = restarted.today();
  ASSERT_EQ(today.models.size(), 2u);
  EXPECT_EQ(today.models.at("model-a").tokens, (Usage{1, 2, 3, 4}));
  EXPECT_EQ(today.models.at("model-b").tokens, (Usage{5, 6, 7, 8}));
  EXPECT_EQ(today.models.at("model-b").requests, 1u);
  // The write left no temporary file behind.
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(root_), {}), 1);
}

TEST_F(UsageTrackerTest, AFileFromAnEarlierDayStartsEmpty) {
  {
    UsageTracker usage = tracker();
    ASSERT_TRUE(usage.record("model-a", Usage{1, 2, 3, 4}).ok());
  }
  clock_.set(usage_ist(2026, 12, 1, 0, 0, 1));
  UsageTracker next_day = tracker();
  ASSERT_TRUE(next_day.load().ok());
  EXPECT_TRUE(next_day.today().models.empty());
  ASSERT_TRUE(next_day.record("model-b", Usage{1, 1, 1, 1}).ok());
  const auto saved = boost::json::parse(read());
  EXPECT_EQ(saved.at("date").as_string(), "2026-12-01");
  EXPECT_FALSE(saved.at("models").as_object().contains("model-a"));
}

TEST_F(UsageTrackerTest, AMissingFileIsAnEmptyDay) {
  UsageTracker usage = tracker();
  ASSERT_TRUE(usage.load().ok());
  EXPECT_TRUE(usage.today().models.empty());
}

TEST_F(UsageTrackerTest, ACorruptFileIsAnErrorNotACrash) {
  // Every counter but the first, valid; the cases below put a bad "requests" before them.
  const std::string counters =
      R"("input_tokens":1,"output_tokens":1,"cache_read_tokens":1,"cache_write_tokens":1)";
  const std::string today = R"({"version":1,"date":"2026-11-30","models":)";
  const std::string corrupt[] = {
      "",
      "{not json",
      "[]",
      R"({"version":1,"models":{}})",
      R"({"version":2,"date":"2026-11-30","models":{}})",
      R"({"version":1,"date":"2026-02-30","models":{}})",
      today + "[]}",
      today + R"({"a":7}})",
      today + R"({"a":{"requests":1}}})",
      today + R"({"a":{"requests":-1,)" + counters + "}}}",
      today + R"({"a":{"requests":1.5,)" + counters + "}}}",
      today + R"({"a":{"requests":"1",)" + counters + "}}}",
  };
  for (const std::string& text : corrupt) {
    write(text);
    UsageTracker usage = tracker();
    const auto loaded = usage.load();
    ASSERT_FALSE(loaded.ok()) << text;
    EXPECT_EQ(loaded.error().code, ErrorCode::invalid_argument) << text;
    EXPECT_NE(loaded.error().what.find(file().native()), std::string::npos) << loaded.error().what;
    EXPECT_NE(loaded.error().what.find("corrupt"), std::string::npos) << loaded.error().what;
    EXPECT_TRUE(usage.today().models.empty());
  }
  // A well-formed file of today loads, as the control for the cases above.
  write(today + R"({"a":{"requests":1,)" + counters + "}}}");
  UsageTracker usage = tracker();
  ASSERT_TRUE(usage.load().ok());
  EXPECT_EQ(usage.today().models.at("a").requests, 1u);
}

TEST_F(UsageTrackerTest, AfterACorruptFileTheNextRecordReplacesIt) {
  write("garbage");
  UsageTracker usage = tracker();
  EXPECT_FALSE(usage.load().ok());
  ASSERT_TRUE(usage.record("model-a", Usage{1, 1, 0, 0}).ok());
  UsageTracker restarted = tracker();
  ASSERT_TRUE(restarted.load().ok());
  EXPECT_EQ(restarted.today().models.at("model-a").requests, 1u);
}

TEST_F(UsageTrackerTest, AFailedSaveKeepsTheCount) {
  UsageTracker usage(clock_, root_ / "missing-folder" / "usage.json", kUsagePrices);
  const auto recorded = usage.record("model-a", Usage{1, 1, 0, 0});
  ASSERT_FALSE(recorded.ok());
  EXPECT_EQ(recorded.error().code, ErrorCode::system);
  EXPECT_NE(recorded.error().what.find("missing-folder"), std::string::npos);
  EXPECT_EQ(usage.today().models.at("model-a").requests, 1u);
}

TEST_F(UsageTrackerTest, DescribesTheDay) {
  UsageTracker usage = tracker();
  EXPECT_EQ(usage.describe(), "No model usage today (Monday 30 November 2026, India time).");
  ASSERT_TRUE(usage.record("model-a", Usage{1'234'567, 8'900, 120'000, 0}).ok());
  EXPECT_EQ(
      usage.describe(),
      "Usage today (Monday 30 November 2026, India time):\n"
      "  model-a: 1 request; tokens 1,234,567 in, 8,900 out, 120,000 cache read; about $3.87");
  ASSERT_TRUE(usage.record("model-b", Usage{1'000, 500, 0, 0}).ok());
  ASSERT_TRUE(usage.record("mystery", Usage{10, 20, 0, 7}).ok());
  EXPECT_EQ(
      usage.describe(),
      "Usage today (Monday 30 November 2026, India time):\n"
      "  model-a: 1 request; tokens 1,234,567 in, 8,900 out, 120,000 cache read; about $3.87\n"
      "  model-b: 1 request; tokens 1,000 in, 500 out; about $0.0020\n"
      "  mystery: 1 request; tokens 10 in, 20 out, 7 cache write; cost unknown (no price for this "
      "model)\n"
      "  Total: 3 requests; about $3.88 plus an unknown cost for mystery");
}

TEST_F(UsageTrackerTest, RecordsFromSeveralThreadsAddUp) {
  UsageTracker usage = tracker();
  std::vector<std::thread> threads;
  for (int thread = 0; thread < 4; ++thread) {
    threads.emplace_back([&usage] {
      for (int request = 0; request < 10; ++request) {
        EXPECT_TRUE(usage.record("model-a", Usage{1, 2, 0, 0}).ok());
        (void)usage.today();
      }
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(usage.today().models.at("model-a").requests, 40u);
  UsageTracker restarted = tracker();
  ASSERT_TRUE(restarted.load().ok());
  EXPECT_EQ(restarted.today().models.at("model-a").tokens, (Usage{40, 80, 0, 0}));
}

// A turn saves its usage off the event loop (save_file_off_loop) and goes on only once the
// file is on disk, on its own thread; a turn being stopped still saves, and its next wait
// still throws.
TEST_F(UsageTrackerTest, RecordOffLoopSavesBeforeTheTurnGoesOnEvenWhenTheTurnIsBeingStopped) {
  namespace asio = boost::asio;
  UsageTracker usage = tracker();
  asio::io_context io;
  asio::cancellation_signal stop;
  bool saved = false;
  bool on_disk_when_resumed = false;
  bool resumed_on_the_loop = false;
  bool next_wait_threw = false;
  auto turn = [&]() -> asio::awaitable<void> {
    stop.emit(asio::cancellation_type::terminal);
    // As ModelTurnRunner::ask does: a turn being stopped keeps the request it made.
    co_await asio::this_coro::throw_if_cancelled(false);
    saved = (co_await usage.record_off_loop("model-a", Usage{1, 2, 0, 0})).ok();
    co_await asio::this_coro::throw_if_cancelled(true);
    on_disk_when_resumed = read().find("model-a") != std::string::npos;
    resumed_on_the_loop = io.get_executor().running_in_this_thread();
    try {
      co_await asio::post(io, asio::use_awaitable);
    } catch (const boost::system::system_error&) {
      next_wait_threw = true;
    }
  };
  asio::co_spawn(io, turn, asio::bind_cancellation_slot(stop.slot(), asio::detached));
  io.run();
  EXPECT_TRUE(saved);
  EXPECT_TRUE(on_disk_when_resumed);
  EXPECT_TRUE(resumed_on_the_loop);
  EXPECT_TRUE(next_wait_threw);
  EXPECT_EQ(usage.today().models.at("model-a").requests, 1u);
}

}  // namespace
}  // namespace deskd::desk

namespace deskd::desk {
namespace {

// The spend charts' days: yesterday kept beside today, across a restart, at most kDaysKept.
TEST_F(UsageTrackerTest, KeepsTheDaysBeforeTodayAcrossARestartAndNoMoreThanItKeeps) {
  {
    UsageTracker usage = tracker();
    ASSERT_TRUE(usage.record("model-a", Usage{1'000'000, 0, 0, 0}).ok());  // $3 on 30 November
    clock_.set(usage_ist(2026, 12, 1, 9, 0));
    ASSERT_TRUE(usage.record("model-b", Usage{0, 1'000'000, 0, 0}).ok());  // $2 on 1 December
  }
  UsageTracker restarted = tracker();
  ASSERT_TRUE(restarted.load().ok());
  const std::vector<DailyUsage> days = restarted.days();
  ASSERT_EQ(days.size(), 2u);
  EXPECT_EQ(days[0].date, (IndiaDate{year{2026} / 11 / 30}));
  EXPECT_NEAR(days[0].models.at("model-a").cost_usd.value_or(0), 3.0, 1e-9);
  EXPECT_EQ(days[1].date, (IndiaDate{year{2026} / 12 / 1}));
  EXPECT_NEAR(days[1].models.at("model-b").cost_usd.value_or(0), 2.0, 1e-9);
  // A file written before "past" existed still reads (above), and today() is unchanged.
  EXPECT_EQ(restarted.today().models.size(), 1u);

  for (int day = 0; day < 100; ++day) {
    clock_.advance(24h);
    ASSERT_TRUE(restarted.record("model-a", Usage{1, 1, 0, 0}).ok());
  }
  const std::vector<DailyUsage> kept = restarted.days();
  ASSERT_EQ(kept.size(), UsageTracker::kDaysKept);
  EXPECT_EQ(kept.back().date, india_date(clock_.now()));
  for (std::size_t index = 1; index < kept.size(); ++index) EXPECT_LT(kept[index - 1].date, kept[index].date);
  EXPECT_LT(read().size(), std::size_t{64} << 10) << "the file stays small";
}

TEST_F(UsageTrackerTest, APastDayThatIsNotADayIsACorruptFile) {
  write(R"({"version":1,"date":"2026-11-30","models":{},"past":[{"date":"soon","models":{}}]})");
  UsageTracker usage = tracker();
  const auto loaded = usage.load();
  ASSERT_FALSE(loaded.ok());
  EXPECT_NE(loaded.error().what.find("is corrupt"), std::string::npos) << loaded.error().what;
}

}  // namespace
}  // namespace deskd::desk
