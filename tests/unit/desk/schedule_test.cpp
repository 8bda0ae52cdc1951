// Schedules: when a schedule fires (India days, weekdays, market days), what catch-up does
// after deskd was down, the state file, and the Scheduler coroutine on a real io_context
// driven by a ManualClock.

#include "runner/desk/schedule.h"

#include <stdlib.h>

#include <boost/asio.hpp>
#include <boost/json.hpp>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "runner/desk/market_status.h"
#include "runner/events/event_bus.h"
#include "runner/journal/journal.h"

namespace deskd::desk {
namespace {

namespace asio = boost::asio;
namespace fs = std::filesystem;
namespace json = boost::json;
using namespace std::chrono_literals;
using std::chrono::sys_days;
using ::testing::HasSubstr;

IndiaDate date(int year, unsigned month, unsigned day) {
  return IndiaDate{std::chrono::year{year}, std::chrono::month{month}, std::chrono::day{day}};
}

// A moment as an India clock shows it. 2026-11-30 is a Monday.
TimePoint ist(unsigned month, unsigned day, int hour, int minute, int second = 0) {
  return india_time_point(date(2026, month, day), hour, minute, second);
}

Schedule daily(std::string name, int hour, int minute, int second = 0) {
  Schedule schedule;
  schedule.name = std::move(name);
  schedule.hour = hour;
  schedule.minute = minute;
  schedule.second = second;
  schedule.text = "Run the " + schedule.name + " routine.";
  return schedule;
}

Schedule on_days(Schedule schedule, std::initializer_list<std::chrono::weekday> weekdays) {
  schedule.days.fill(false);
  for (const auto weekday : weekdays) schedule.days[weekday.c_encoding()] = true;
  return schedule;
}

// ---- next_firing ----

TEST(NextFiringTest, FiresStrictlyAfterAndNeverEarly) {
  const Schedule nine = daily("open", 9, 0);
  EXPECT_EQ(next_firing(nine, ist(11, 30, 8, 59, 59), nullptr), ist(11, 30, 9, 0));
  EXPECT_EQ(next_firing(nine, ist(11, 30, 9, 0) - 1ns, nullptr), ist(11, 30, 9, 0));
  // Exactly at its time is not "after": the next one is tomorrow.
  EXPECT_EQ(next_firing(nine, ist(11, 30, 9, 0), nullptr), ist(12, 1, 9, 0));
  EXPECT_EQ(next_firing(nine, ist(11, 30, 9, 0) + 1ns, nullptr), ist(12, 1, 9, 0));
  EXPECT_EQ(next_firing(daily("late", 23, 59, 59), ist(12, 31, 23, 59, 59), nullptr),
            india_time_point(date(2027, 1, 1), 23, 59, 59));
}

TEST(NextFiringTest, KeepsToTheSelectedWeekdays) {
  const Schedule schedule = on_days(daily("review", 9, 30), {std::chrono::Wednesday, std::chrono::Friday});
  EXPECT_EQ(next_firing(schedule, ist(11, 30, 10, 0), nullptr), ist(12, 2, 9, 30));
  EXPECT_EQ(next_firing(schedule, ist(12, 2, 9, 30), nullptr), ist(12, 4, 9, 30));
  EXPECT_EQ(next_firing(schedule, ist(12, 4, 9, 30), nullptr), ist(12, 9, 9, 30));
  EXPECT_EQ(next_firing(on_days(daily("never", 9, 0), {}), ist(11, 30, 0, 0), nullptr), std::nullopt);
}

TEST(NextFiringTest, MarketDaysOnlySkipsWeekendsAndHolidays) {
  Schedule schedule = daily("pre-open", 9, 0);
  schedule.market_days_only = true;
  // Without a market: weekends only.
  EXPECT_EQ(next_firing(schedule, ist(12, 4, 10, 0), nullptr), ist(12, 7, 9, 0));
  EXPECT_EQ(next_firing(schedule, ist(11, 30, 10, 0), nullptr), ist(12, 1, 9, 0));
  const MarketStatus market(MarketStatus::Holidays{{date(2026, 12, 1), "A test holiday"}});
  EXPECT_EQ(next_firing(schedule, ist(11, 30, 10, 0), &market), ist(12, 2, 9, 0));
  EXPECT_EQ(next_firing(schedule, ist(12, 4, 10, 0), &market), ist(12, 7, 9, 0));
  // Saturdays only and market days only: never.
  EXPECT_EQ(next_firing(on_days(schedule, {std::chrono::Saturday}), ist(11, 30, 0, 0), &market), std::nullopt);
}

TEST(NextFiringTest, DaysAreIndiaDaysNotUtcDays) {
  const Schedule monday_four = on_days(daily("early", 4, 0), {std::chrono::Monday});
  // Sunday 22:00 UTC is Monday 03:30 in India; 04:00 IST Monday is 22:30 UTC Sunday.
  const TimePoint sunday_utc = sys_days{std::chrono::November / 29 / 2026} + 22h;
  const auto firing = next_firing(monday_four, sunday_utc, nullptr);
  ASSERT_TRUE(firing.has_value());
  EXPECT_EQ(*firing, sunday_utc + 30min);
  EXPECT_EQ(std::chrono::weekday{std::chrono::floor<std::chrono::days>(*firing)}, std::chrono::Sunday);
  // Monday 00:00 UTC is already 05:30 in India: next Monday's.
  EXPECT_EQ(next_firing(monday_four, sys_days{std::chrono::November / 30 / 2026}, nullptr),
            sys_days{std::chrono::December / 6 / 2026} + 22h + 30min);
}

TEST(NextFiringTest, ImpossibleTimesNeverFire) {
  EXPECT_EQ(next_firing(daily("bad", 24, 0), ist(11, 30, 0, 0), nullptr), std::nullopt);
  EXPECT_EQ(next_firing(daily("bad", 9, 60), ist(11, 30, 0, 0), nullptr), std::nullopt);
  EXPECT_EQ(next_firing(daily("bad", -1, 0), ist(11, 30, 0, 0), nullptr), std::nullopt);
}

// ---- ScheduleBook ----

TEST(ScheduleBookTest, CatchUpWithinTheWindowFiresOnceLate) {
  std::vector<Missed> reported_missed;
  ScheduleBook book({daily("open", 9, 0)}, nullptr, 30min, ist(11, 30, 8, 0));
  std::vector<Missed> missed;
  const auto firings = book.catch_up(ist(11, 30, 9, 10), missed);
  ASSERT_EQ(firings.size(), 1u);
  EXPECT_EQ(firings[0].schedule, 0u);
  EXPECT_EQ(firings[0].due, ist(11, 30, 9, 0));
  EXPECT_TRUE(firings[0].late);
  EXPECT_TRUE(missed.empty());
  EXPECT_EQ(book.checked_until(), ist(11, 30, 9, 10));
  EXPECT_TRUE(book.due(ist(11, 30, 9, 10), reported_missed).empty());
  EXPECT_EQ(book.next_wake(), ist(12, 1, 9, 0));
}

TEST(ScheduleBookTest, CatchUpOlderThanTheWindowIsReportedNotRun) {
  ScheduleBook book({daily("open", 9, 0)}, nullptr, 30min, ist(11, 30, 8, 0));
  std::vector<Missed> missed;
  EXPECT_TRUE(book.catch_up(ist(11, 30, 9, 30, 1), missed).empty());
  ASSERT_EQ(missed.size(), 1u);
  EXPECT_EQ(missed[0].schedule, 0u);
  EXPECT_EQ(missed[0].due, ist(11, 30, 9, 0));
  EXPECT_EQ(missed[0].count, 1u);
  EXPECT_EQ(book.checked_until(), ist(11, 30, 9, 30, 1));
}

TEST(ScheduleBookTest, SeveralDaysMissedFireAtMostOncePerSchedule) {
  const std::vector<Schedule> schedules{daily("open", 9, 0), daily("early", 7, 0)};
  {
    ScheduleBook book(schedules, nullptr, 30min, ist(11, 30, 8, 0));
    std::vector<Missed> missed;
    const auto firings = book.catch_up(ist(12, 3, 9, 5), missed);
    ASSERT_EQ(firings.size(), 1u);
    EXPECT_EQ(firings[0].schedule, 0u);
    EXPECT_EQ(firings[0].due, ist(12, 3, 9, 0));
    ASSERT_EQ(missed.size(), 2u);
    // "open": 30 Nov, 1 and 2 Dec missed, 3 Dec runs.
    EXPECT_EQ(missed[0].schedule, 0u);
    EXPECT_EQ(missed[0].due, ist(12, 2, 9, 0));
    EXPECT_EQ(missed[0].count, 3u);
    // "early": 1, 2 and 3 Dec, all too old.
    EXPECT_EQ(missed[1].schedule, 1u);
    EXPECT_EQ(missed[1].due, ist(12, 3, 7, 0));
    EXPECT_EQ(missed[1].count, 3u);
  }
  {
    ScheduleBook book(schedules, nullptr, 30min, ist(11, 30, 8, 0));
    std::vector<Missed> missed;
    EXPECT_TRUE(book.catch_up(ist(12, 3, 11, 0), missed).empty());
    ASSERT_EQ(missed.size(), 2u);
    EXPECT_EQ(missed[0].due, ist(12, 3, 9, 0));
    EXPECT_EQ(missed[0].count, 4u);
  }
}

TEST(ScheduleBookTest, CatchUpSkipsAFiringTheJournalHoldsThoughTheStateFileIsOlder) {
  // deskd journaled the 09:00 firing and died before it saved checked_until (08:00).
  ScheduleBook book({daily("open", 9, 0), daily("close", 9, 5)}, nullptr, 30min, ist(11, 30, 8, 0));
  std::vector<Missed> missed;
  EXPECT_TRUE(book.has_firings_since_checked(ist(11, 30, 9, 10)));
  const auto firings = book.catch_up(ist(11, 30, 9, 10), missed, {{"open", ist(11, 30, 9, 0)}});
  ASSERT_EQ(firings.size(), 1u);  // "close" was never journaled: it runs
  EXPECT_EQ(book.schedules()[firings[0].schedule].name, "close");
  EXPECT_TRUE(missed.empty());
  EXPECT_EQ(book.checked_until(), ist(11, 30, 9, 10));
}

TEST(ScheduleBookTest, AJournaledFiringFromAnEarlierDayLeavesTodaysToRun) {
  ScheduleBook book({daily("open", 9, 0)}, nullptr, 30min, ist(11, 28, 8, 0));
  std::vector<Missed> missed;
  const auto firings = book.catch_up(ist(11, 30, 9, 10), missed, {{"open", ist(11, 29, 9, 0)}});
  ASSERT_EQ(firings.size(), 1u);
  EXPECT_EQ(firings[0].due, ist(11, 30, 9, 0));
  // The 28th's firing is older than the journaled 29th's: deskd handled it before that one.
  EXPECT_TRUE(missed.empty());
}

TEST(ScheduleBookTest, CatchUpCountsOnlyMarketDays) {
  Schedule schedule = daily("pre-open", 9, 0);
  schedule.market_days_only = true;
  const MarketStatus market(MarketStatus::Holidays{{date(2026, 12, 1), ""}});
  ScheduleBook book({schedule}, &market, 30min, ist(11, 27, 10, 0));  // a Friday
  std::vector<Missed> missed;
  EXPECT_TRUE(book.catch_up(ist(12, 2, 12, 0), missed).empty());
  ASSERT_EQ(missed.size(), 1u);
  EXPECT_EQ(missed[0].due, ist(12, 2, 9, 0));
  EXPECT_EQ(missed[0].count, 2u);  // Monday 30 Nov and Wednesday 2 Dec
}

TEST(ScheduleBookTest, FirstStartMissesNothing) {
  ScheduleBook book({daily("open", 9, 0)}, nullptr, 30min, std::nullopt);
  EXPECT_EQ(book.next_wake(), std::nullopt);  // "now" is not known yet
  std::vector<Missed> missed;
  EXPECT_TRUE(book.catch_up(ist(11, 30, 9, 10), missed).empty());
  EXPECT_TRUE(missed.empty());
  EXPECT_EQ(book.checked_until(), ist(11, 30, 9, 10));
  EXPECT_EQ(book.next_wake(), ist(12, 1, 9, 0));
}

TEST(ScheduleBookTest, DueFiresOnceAtItsTime) {
  std::vector<Missed> reported_missed;
  ScheduleBook book({daily("open", 9, 0), daily("close", 15, 30)}, nullptr, 30min, ist(11, 30, 8, 0));
  std::vector<Missed> missed;
  EXPECT_TRUE(book.catch_up(ist(11, 30, 8, 0), missed).empty());
  EXPECT_EQ(book.next_wake(), ist(11, 30, 9, 0));
  EXPECT_TRUE(book.due(ist(11, 30, 9, 0) - 1ns, reported_missed).empty());
  const auto firings = book.due(ist(11, 30, 9, 0), reported_missed);
  ASSERT_EQ(firings.size(), 1u);
  EXPECT_EQ(firings[0].schedule, 0u);
  EXPECT_EQ(firings[0].due, ist(11, 30, 9, 0));
  EXPECT_FALSE(firings[0].late);
  EXPECT_TRUE(book.due(ist(11, 30, 9, 0), reported_missed).empty());
  EXPECT_TRUE(book.due(ist(11, 30, 9, 0, 1), reported_missed).empty());
  EXPECT_EQ(book.next_wake(), ist(11, 30, 15, 30));
}

TEST(ScheduleBookTest, ClockGoingBackNeverFiresTwice) {
  std::vector<Missed> reported_missed;
  ScheduleBook book({daily("open", 9, 0)}, nullptr, 30min, ist(11, 30, 8, 0));
  ASSERT_EQ(book.due(ist(11, 30, 9, 0, 5), reported_missed).size(), 1u);
  EXPECT_TRUE(book.due(ist(11, 30, 8, 59), reported_missed).empty());
  EXPECT_EQ(book.checked_until(), ist(11, 30, 9, 0, 5));
  EXPECT_EQ(book.next_wake(), ist(12, 1, 9, 0));
  EXPECT_TRUE(book.due(ist(11, 30, 9, 0, 30), reported_missed).empty());
  std::vector<Missed> missed;
  EXPECT_TRUE(book.catch_up(ist(11, 30, 7, 0), missed).empty());
  EXPECT_TRUE(missed.empty());
  EXPECT_EQ(book.checked_until(), ist(11, 30, 9, 0, 30));
}

TEST(ScheduleBookTest, DueAfterASuspendFiresOnlyTheLatestAndReportsTheRest) {
  std::vector<Missed> reported_missed;
  ScheduleBook book({daily("open", 9, 0)}, nullptr, 30min, ist(11, 30, 8, 0));
  const auto firings = book.due(ist(12, 3, 12, 0), reported_missed);
  ASSERT_EQ(firings.size(), 1u);
  EXPECT_EQ(firings[0].due, ist(12, 3, 9, 0));
  EXPECT_FALSE(firings[0].late);
}

// ---- the state file ----

class ScheduleFilesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/var/tmp/deskd-schedule-XXXXXX";
    ASSERT_NE(::mkdtemp(pattern), nullptr);
    root_ = pattern;
    state_ = root_ / "desks" / "alpha" / "state" / "schedule.json";
  }
  void TearDown() override { fs::remove_all(root_); }

  void write(const std::string& text) {
    fs::create_directories(state_.parent_path());
    std::ofstream(state_) << text;
  }
  std::string read() const {
    std::ifstream file(state_);
    std::stringstream text;
    text << file.rdbuf();
    return text.str();
  }

  fs::path root_;
  fs::path state_;
};

TEST_F(ScheduleFilesTest, StateRoundTripsToTheMillisecond) {
  const auto missing = load_checked_until(state_);
  ASSERT_TRUE(missing.ok()) << missing.error().what;
  EXPECT_EQ(*missing, std::nullopt);

  const TimePoint time = ist(11, 30, 9, 14, 5) + 123456789ns;
  const auto saved = save_checked_until(state_, time);
  ASSERT_TRUE(saved.ok()) << saved.error().what;
  const json::object state = json::parse(read()).as_object();
  EXPECT_EQ(state.at("checked_until").as_string(), "2026-11-30T09:14:05+05:30");
  EXPECT_EQ(state.at("unix_ms").to_number<std::int64_t>(),
            std::chrono::floor<std::chrono::milliseconds>(time).time_since_epoch().count());
  // Nothing of the write is left beside it (write_file_atomically's temporary file).
  EXPECT_EQ(std::distance(fs::directory_iterator(state_.parent_path()), fs::directory_iterator{}), 1);

  const auto loaded = load_checked_until(state_);
  ASSERT_TRUE(loaded.ok()) << loaded.error().what;
  EXPECT_EQ(*loaded, ist(11, 30, 9, 14, 5) + 123ms);

  ASSERT_TRUE(save_checked_until(state_, time + 1h).ok());
  EXPECT_EQ(*load_checked_until(state_), ist(11, 30, 10, 14, 5) + 123ms);
}

TEST_F(ScheduleFilesTest, MalformedStateIsAnErrorNamingThePath) {
  for (const char* text : {"", "not json", "[1, 2]", "{}", R"({"unix_ms": "soon"})", R"({"unix_ms": -5})",
                           R"({"unix_ms": 1.5})", R"({"unix_ms": 99999999999999999})"}) {
    write(text);
    const auto loaded = load_checked_until(state_);
    ASSERT_FALSE(loaded.ok()) << text;
    EXPECT_THAT(loaded.error().what, HasSubstr(state_.string())) << text;
  }
}

// ---- Scheduler ----

class SchedulerTest : public ScheduleFilesTest {
 protected:
  SchedulerTest() : subscription_(bus_.subscribe(io_.get_executor())) {}

  SchedulerSettings settings() const {
    return SchedulerSettings{.desk = "alpha", .state_file = state_, .catch_up_window = 30min, .market = nullptr};
  }
  // Starts `scheduler.run()` with a cancellation slot; `done_` once it ends.
  void start(Scheduler& scheduler) {
    asio::co_spawn(io_, scheduler.run(), asio::bind_cancellation_slot(stop_.slot(), [this](std::exception_ptr error) {
                     done_ = true;
                     escaped_ = error;
                   }));
  }
  // Runs the io_context in small slices until `condition` holds or about two seconds pass.
  template <typename Condition>
  void run_until(Condition condition) {
    for (int slice = 0; slice < 400 && !condition(); ++slice) io_.run_for(5ms);
  }
  void stop_and_wait() {
    stop_.emit(asio::cancellation_type::terminal);
    run_until([&] { return done_; });
    ASSERT_TRUE(done_);
    EXPECT_FALSE(escaped_);
  }
  Scheduler::Submit recorder() {
    return [this](Trigger trigger, Scheduler::Acknowledgement acknowledged) {
      submitted_.push_back(std::move(trigger));
      acknowledged(success());
    };
  }
  std::vector<Event> events() {
    std::vector<Event> seen;
    while (auto event = subscription_->try_next()) seen.push_back(std::move(*event));
    return seen;
  }

  ManualClock clock_{ist(11, 30, 9, 14, 5)};
  asio::io_context io_;
  EventBus bus_{clock_};
  std::shared_ptr<EventSubscription> subscription_;
  asio::cancellation_signal stop_;
  std::vector<Trigger> submitted_;
  bool done_ = false;
  std::exception_ptr escaped_;
};

TEST_F(SchedulerTest, FiresOnceWhenTheClockReachesTheTimeAndStopsWhenCancelled) {
  Scheduler scheduler(io_.get_executor(), {daily("open", 9, 14, 6)}, settings(), recorder(), bus_, clock_, 5ms);
  start(scheduler);
  // The real timers run for a while, but the clock has not reached 09:14:06.
  io_.run_for(60ms);
  EXPECT_TRUE(submitted_.empty());
  EXPECT_FALSE(done_);
  ASSERT_TRUE(load_checked_until(state_).ok());
  EXPECT_EQ(*load_checked_until(state_), ist(11, 30, 9, 14, 5));  // first start, saved

  clock_.advance(1500ms);
  run_until([&] { return !submitted_.empty(); });
  io_.run_for(30ms);
  ASSERT_EQ(submitted_.size(), 1u);
  const Trigger& trigger = submitted_[0];
  EXPECT_THAT(trigger.id, ::testing::StartsWith("t-"));
  EXPECT_EQ(trigger.desk, "alpha");
  EXPECT_EQ(trigger.source, Trigger::Source::schedule);
  EXPECT_EQ(trigger.text, "Run the open routine.");
  EXPECT_EQ(trigger.schedule, "open");
  EXPECT_EQ(trigger.sender, "");
  EXPECT_EQ(trigger.received, ist(11, 30, 9, 14, 6) + 500ms);
  EXPECT_FALSE(trigger.redelivered);
  EXPECT_EQ(*load_checked_until(state_), ist(11, 30, 9, 14, 6) + 500ms);
  EXPECT_TRUE(events().empty());

  stop_and_wait();
  EXPECT_EQ(submitted_.size(), 1u);
}

TEST_F(SchedulerTest, AFiringCountsOnlyOnceTheDeskHasAcknowledgedItAndTheLoopRunsMeanwhile) {
  Scheduler::Acknowledgement held;
  Scheduler scheduler(
      io_.get_executor(), {daily("open", 9, 14, 6)}, settings(),
      [&](Trigger trigger, Scheduler::Acknowledgement acknowledged) {
        submitted_.push_back(std::move(trigger));
        held = std::move(acknowledged);  // the journal's fsync, not yet done
      },
      bus_, clock_, 5ms);
  start(scheduler);
  io_.run_for(20ms);
  clock_.advance(1500ms);
  run_until([&] { return !submitted_.empty(); });
  ASSERT_EQ(submitted_.size(), 1u);
  // The loop runs on while the desk has not acknowledged, and the firing does not count yet:
  // a crash now would fire it again at start rather than lose it.
  bool loop_ran = false;
  asio::post(io_, [&] { loop_ran = true; });
  io_.run_for(30ms);
  EXPECT_TRUE(loop_ran);
  EXPECT_EQ(*load_checked_until(state_), ist(11, 30, 9, 14, 5));
  // Cancelled meanwhile, it still waits for the acknowledgement, then saves and ends.
  stop_.emit(asio::cancellation_type::terminal);
  io_.run_for(20ms);
  EXPECT_FALSE(done_);
  held(success());
  run_until([&] { return done_; });
  ASSERT_TRUE(done_);
  EXPECT_FALSE(escaped_);
  EXPECT_EQ(*load_checked_until(state_), ist(11, 30, 9, 14, 6) + 500ms);
}

TEST_F(SchedulerTest, CatchUpOnStartRunsTheLatestAndReportsTheRest) {
  ASSERT_TRUE(save_checked_until(state_, ist(11, 28, 8, 0)).ok());
  clock_.set(ist(11, 30, 9, 10));
  Scheduler scheduler(io_.get_executor(), {daily("open", 9, 0), daily("early", 7, 0)}, settings(), recorder(),
                      bus_, clock_, 5ms);
  start(scheduler);
  run_until([&] { return !submitted_.empty(); });
  io_.run_for(20ms);
  ASSERT_EQ(submitted_.size(), 1u);
  EXPECT_EQ(submitted_[0].schedule, "open");
  EXPECT_EQ(submitted_[0].received, ist(11, 30, 9, 10));

  const std::vector<Event> seen = events();
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(seen[0].kind, event_kind::kScheduleMissed);
  EXPECT_EQ(seen[0].desk, "alpha");
  EXPECT_EQ(seen[0].data.at("schedule").as_string(), "open");
  EXPECT_EQ(seen[0].data.at("due").as_string(), "2026-11-29T09:00:00+05:30");
  EXPECT_EQ(seen[0].data.at("missed").to_number<int>(), 2);
  EXPECT_THAT(std::string(seen[0].data.at("reason").as_string()), HasSubstr("only the latest"));
  EXPECT_EQ(seen[1].data.at("schedule").as_string(), "early");
  EXPECT_EQ(seen[1].data.at("due").as_string(), "2026-11-30T07:00:00+05:30");
  EXPECT_EQ(seen[1].data.at("missed").to_number<int>(), 2);
  EXPECT_EQ(seen[1].data.at("reason").as_string(),
            "deskd was not running; the firing is older than the catch-up window of 30 minutes");
  EXPECT_EQ(*load_checked_until(state_), ist(11, 30, 9, 10));

  stop_and_wait();
}

// A crash between a firing's journal line and the save of the state file: the restarted
// scheduler finds the firing in the journal and does not run it again.
TEST_F(SchedulerTest, AFiringJournaledBeforeACrashIsNotCaughtUpAgain) {
  ASSERT_TRUE(save_checked_until(state_, ist(11, 30, 8, 0)).ok());  // the stale state file
  const fs::path journal_path = root_ / "journal.jsonl";
  {
    EventBus earlier_bus(clock_);
    auto journal = Journal::open(journal_path).value();
    Trigger fired{.id = make_trigger_id(), .desk = "alpha", .source = Trigger::Source::schedule,
                  .text = "Run the open routine.", .sender = "", .schedule = "open",
                  .received = ist(11, 30, 9, 0) + 20ms, .due = ist(11, 30, 9, 0)};
    fired.kind = Trigger::Kind::message;
    ASSERT_TRUE(journal.append(earlier_bus.publish("alpha", event_kind::kTriggerAccepted, to_json(fired))).ok());
    ASSERT_TRUE(journal.append(earlier_bus.publish("alpha", event_kind::kTurnStarted, {{"trigger", fired.id}})).ok());
  }
  clock_.set(ist(11, 30, 9, 10));
  SchedulerSettings with_journal = settings();
  with_journal.journal_file = journal_path;
  Scheduler scheduler(io_.get_executor(), {daily("open", 9, 0)}, with_journal, recorder(), bus_, clock_, 5ms);
  start(scheduler);
  run_until([&] { return *load_checked_until(state_) == ist(11, 30, 9, 10); });
  io_.run_for(30ms);
  EXPECT_TRUE(submitted_.empty()) << "the 09:00 firing ran twice";
  EXPECT_TRUE(events().empty());  // nor is it reported missed
  EXPECT_EQ(*load_checked_until(state_), ist(11, 30, 9, 10));
  stop_and_wait();
}

TEST_F(SchedulerTest, AFiringIsJournaledWithItsPlannedTime) {
  ASSERT_TRUE(save_checked_until(state_, ist(11, 30, 8, 0)).ok());
  clock_.set(ist(11, 30, 9, 10));
  Scheduler scheduler(io_.get_executor(), {daily("open", 9, 0)}, settings(), recorder(), bus_, clock_, 5ms);
  start(scheduler);
  run_until([&] { return !submitted_.empty(); });
  ASSERT_EQ(submitted_.size(), 1u);
  EXPECT_EQ(submitted_[0].due, ist(11, 30, 9, 0));
  const Result<Trigger> back = trigger_from_json(to_json(submitted_[0]));
  ASSERT_TRUE(back.ok()) << back.error().what;
  EXPECT_EQ(back->due, ist(11, 30, 9, 0));
  stop_and_wait();
}

TEST_F(ScheduleFilesTest, JournaledFiringsAreReadFromTheJournalsEnd) {
  const fs::path journal_path = root_ / "journal.jsonl";
  EXPECT_TRUE(read_journaled_firings(journal_path).empty());  // no journal yet
  ManualClock clock(ist(11, 30, 9, 0));
  EventBus bus(clock);
  auto journal = Journal::open(journal_path).value();
  const auto fired = [&](std::string schedule, TimePoint received, std::optional<TimePoint> due) {
    Trigger trigger{.id = make_trigger_id(), .desk = "alpha", .source = Trigger::Source::schedule, .text = "go",
                    .sender = "", .schedule = std::move(schedule), .received = received, .due = due};
    ASSERT_TRUE(journal.append(bus.publish("alpha", event_kind::kTriggerAccepted, to_json(trigger))).ok());
  };
  fired("open", ist(11, 29, 9, 0, 1), ist(11, 29, 9, 0));
  fired("open", ist(11, 30, 9, 0, 1), ist(11, 30, 9, 0));
  fired("close", ist(11, 30, 15, 30, 2), std::nullopt);  // a line from before "due" was journaled
  Trigger user{.id = make_trigger_id(), .desk = "alpha", .source = Trigger::Source::user, .text = "hello", .sender = "ravi",
               .schedule = "", .received = ist(11, 30, 16, 0)};
  ASSERT_TRUE(journal.append(bus.publish("alpha", event_kind::kTriggerAccepted, to_json(user))).ok());
  const JournaledFirings firings = read_journaled_firings(journal_path);
  ASSERT_EQ(firings.size(), 2u);
  EXPECT_EQ(firings.at("open"), ist(11, 30, 9, 0));
  EXPECT_EQ(firings.at("close"), ist(11, 30, 15, 30, 2));
}

TEST_F(SchedulerTest, ARefusedTriggerIsReportedAsMissed) {
  ASSERT_TRUE(save_checked_until(state_, ist(11, 30, 8, 0)).ok());
  clock_.set(ist(11, 30, 9, 1));
  Scheduler scheduler(
      io_.get_executor(), {daily("open", 9, 0)}, settings(),
      [](Trigger, Scheduler::Acknowledgement acknowledged) {
        acknowledged(Error::make(ErrorCode::refused, "The desk is stopping."));
      },
      bus_, clock_, 5ms);
  start(scheduler);
  std::vector<Event> seen;
  run_until([&] {
    for (Event& event : events()) seen.push_back(std::move(event));
    return !seen.empty();
  });
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0].kind, event_kind::kScheduleMissed);
  EXPECT_EQ(seen[0].data.at("schedule").as_string(), "open");
  EXPECT_EQ(seen[0].data.at("missed").to_number<int>(), 1);
  EXPECT_THAT(std::string(seen[0].data.at("reason").as_string()), HasSubstr("The desk is stopping."));
  stop_and_wait();
}

TEST_F(SchedulerTest, AnUnreadableStateIsReportedAndStartsAfresh) {
  write("{ damaged");
  clock_.set(ist(11, 30, 9, 1));
  Scheduler scheduler(io_.get_executor(), {daily("open", 9, 0)}, settings(), recorder(), bus_, clock_, 5ms);
  start(scheduler);
  io_.run_for(30ms);
  EXPECT_TRUE(submitted_.empty());
  const std::vector<Event> seen = events();
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0].kind, event_kind::kScheduleMissed);
  EXPECT_THAT(std::string(seen[0].data.at("reason").as_string()), HasSubstr(state_.string()));
  EXPECT_EQ(seen[0].data.at("state_file").as_string(), state_.string());
  const auto repaired = load_checked_until(state_);
  ASSERT_TRUE(repaired.ok()) << repaired.error().what;
  EXPECT_EQ(*repaired, ist(11, 30, 9, 1));
  stop_and_wait();
}

TEST_F(SchedulerTest, AStateThatCannotBeSavedIsReportedOnce) {
  fs::create_directories(root_ / "blocked");
  std::ofstream(root_ / "blocked" / "file") << "x";
  SchedulerSettings blocked = settings();
  blocked.state_file = root_ / "blocked" / "file" / "schedule.json";  // a file where a folder must be
  Scheduler scheduler(io_.get_executor(), {daily("open", 9, 14, 6)}, blocked, recorder(), bus_, clock_, 5ms);
  start(scheduler);
  io_.run_for(20ms);
  clock_.advance(1s);
  run_until([&] { return !submitted_.empty(); });
  io_.run_for(20ms);
  EXPECT_EQ(submitted_.size(), 1u);
  const std::vector<Event> seen = events();
  // The first start cannot read it either (ENOTDIR), then saving fails: each said once.
  std::size_t not_saved = 0;
  for (const Event& event : seen) not_saved += event.kind == event_kind::kScheduleStateNotSaved ? 1 : 0;
  EXPECT_EQ(not_saved, 1u);
  stop_and_wait();
}

}  // namespace
}  // namespace deskd::desk
