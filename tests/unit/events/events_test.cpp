// Triggers and events as JSON, and the EventBus: ordering, sinks, slow and fast
// subscribers, waking across threads.

#include <boost/asio.hpp>
#include <boost/json.hpp>
#include <set>
#include <thread>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "runner/events/event_bus.h"
#include "runner/events/trigger.h"

namespace deskd::desk {

class EventBusTestPeer {
 public:
  static std::size_t subscribers(EventBus& bus) {
    const std::lock_guard lock(bus.mutex_);
    return bus.subscribers_.size();
  }
};

namespace {

namespace asio = boost::asio;
namespace json = boost::json;
using namespace std::chrono_literals;
using ::testing::HasSubstr;
using ::testing::MatchesRegex;

// 2026-11-30 03:44:05 UTC, which is 09:14:05 in India.
const Clock::TimePoint kStart = std::chrono::sys_days{std::chrono::November / 30 / 2026} + 3h + 44min + 5s;

auto fields(const Trigger& trigger) {
  return std::tie(trigger.id, trigger.desk, trigger.source, trigger.text, trigger.sender, trigger.schedule,
                  trigger.received, trigger.redelivered, trigger.queued_explicitly);
}

Trigger sample_trigger() {
  return Trigger{.id = make_trigger_id(), .desk = "alpha", .source = Trigger::Source::user,
                 .text = "Buy less.\nNo \"quotes\" lost: \u20b9", .sender = "asha", .schedule = "",
                 .received = kStart + 123456789ns, .redelivered = true, .queued_explicitly = true};
}

TEST(TriggerTest, IdsAreFreshAndWellFormed) {
  std::set<std::string> ids;
  for (int index = 0; index < 1000; ++index) ids.insert(make_trigger_id());
  EXPECT_EQ(ids.size(), 1000u);
  EXPECT_THAT(*ids.begin(), MatchesRegex("t-[0-9a-f]{16}"));
}

TEST(TriggerTest, RoundTripsExactlyToTheNanosecond) {
  const Trigger trigger = sample_trigger();
  const json::object object = to_json(trigger);
  EXPECT_EQ(object.at("received").as_string(), "2026-11-30T03:44:05.123456789Z");
  EXPECT_EQ(object.at("source").as_string(), "user");
  // Through text too, as the journal stores it.
  const Result<Trigger> back = trigger_from_json(json::parse(json::serialize(object)).as_object());
  ASSERT_TRUE(back.ok()) << back.error().what;
  EXPECT_EQ(fields(*back), fields(trigger));
}

TEST(TriggerTest, ScheduleTriggerRoundTripsAndWritesShortTimes) {
  Trigger trigger{.id = "t-0000000000000001", .desk = "beta", .source = Trigger::Source::schedule,
                  .text = "Morning review.", .sender = "", .schedule = "morning", .received = kStart};
  json::object object = to_json(trigger);
  EXPECT_EQ(object.at("received").as_string(), "2026-11-30T03:44:05Z");
  EXPECT_EQ(object.at("source").as_string(), "schedule");
  const Result<Trigger> back = trigger_from_json(object);
  ASSERT_TRUE(back.ok()) << back.error().what;
  EXPECT_EQ(fields(*back), fields(trigger));

  trigger.received = kStart + 250ms;
  EXPECT_EQ(to_json(trigger).at("received").as_string(), "2026-11-30T03:44:05.250Z");
  trigger.received = std::chrono::system_clock::time_point{};
  EXPECT_EQ(to_json(trigger).at("received").as_string(), "1970-01-01T00:00:00Z");
  EXPECT_EQ(fields(trigger_from_json(to_json(trigger)).value()), fields(trigger));
}

TEST(TriggerTest, RefusesMissingOrMistypedFields) {
  const json::object good = to_json(sample_trigger());
  const std::pair<const char*, json::value> bad[] = {
      {"id", json::value(nullptr)},    {"id", json::value("")},          {"desk", json::value(5)},
      {"source", json::value("robot")}, {"text", json::value(json::array{})}, {"sender", json::value(true)},
      {"schedule", json::value(1.5)},  {"received", json::value("yesterday")},
      {"received", json::value("2026-02-30T00:00:00Z")}, {"received", json::value("2026-11-30T03:44:05+05:30")},
      {"received", json::value(1798000000000)}, {"redelivered", json::value("yes")},
      {"queued_explicitly", json::value(0)}};
  for (const auto& [field, value] : bad) {
    json::object object = good;
    object[field] = value;
    const Result<Trigger> result = trigger_from_json(object);
    ASSERT_FALSE(result.ok()) << field << " = " << json::serialize(value);
    EXPECT_EQ(result.error().code, ErrorCode::invalid_argument);
    EXPECT_THAT(result.error().what, HasSubstr(std::string("\"") + field + "\""));
    object.erase(field);
    EXPECT_FALSE(trigger_from_json(object).ok()) << "missing " << field;
  }
}

class EventBusTest : public ::testing::Test {
 protected:
  // Runs the context until it runs out of work; false, rather than a hang, if it never does
  // (a lost wake-up). Tests join their threads before asserting on it.
  bool run() {
    context_.restart();
    context_.run_for(20s);
    return context_.stopped();
  }

  ManualClock clock_{kStart};
  EventBus bus_{clock_};
  asio::io_context context_;
};

TEST_F(EventBusTest, EventJsonHasTheDocumentedShape) {
  const Event event = bus_.publish("alpha", event_kind::kTurnStarted, {{"trigger", "t-1"}});
  EXPECT_EQ(json::serialize(to_json(event)),
            R"({"id":"e-1","time":"2026-11-30T09:14:05+05:30","desk":"alpha","kind":"TURN_STARTED",)"
            R"("data":{"trigger":"t-1"}})");
  EXPECT_EQ(json::serialize(to_json(bus_.publish("alpha", event_kind::kDeskStarted)).at("data")), "{}");
}

TEST_F(EventBusTest, IdsAreUniqueAndIncreasingAndTimesComeFromTheClock) {
  const Event first = bus_.publish("alpha", event_kind::kDeskStarted);
  clock_.advance(90s);
  const Event second = bus_.publish("beta", event_kind::kDeskStarted);
  EXPECT_EQ(first.id, "e-1");
  EXPECT_EQ(second.id, "e-2");
  EXPECT_EQ(second.time, "2026-11-30T09:15:35+05:30");
}

TEST_F(EventBusTest, SinksAreCalledInOrderForEveryEvent) {
  std::vector<std::string> calls;
  bus_.add_sink([&](const Event& event) { calls.push_back("first " + event.id); });
  bus_.add_sink([&](const Event& event) { calls.push_back("second " + event.id + " " + event.kind); });
  bus_.publish("alpha", event_kind::kDeskStarted);
  bus_.publish("alpha", event_kind::kDeskStopped);
  EXPECT_THAT(calls, ::testing::ElementsAre("first e-1", "second e-1 DESK_STARTED", "first e-2",
                                            "second e-2 DESK_STOPPED"));
}

TEST_F(EventBusTest, ASubscriberThatNeverReadsLosesItsOldestEventsAndCountsThem) {
  const auto idle = bus_.subscribe(context_.get_executor(), 3);
  const auto reader = bus_.subscribe(context_.get_executor(), 100);
  for (int index = 0; index < 10; ++index) bus_.publish("alpha", event_kind::kModelText, {{"n", index}});
  EXPECT_EQ(idle->dropped(), 7u);
  EXPECT_EQ(reader->dropped(), 0u);
  for (int expected = 7; expected < 10; ++expected) {
    const auto event = idle->try_next();
    ASSERT_TRUE(event);
    EXPECT_EQ(event->data.at("n").as_int64(), expected);
  }
  EXPECT_FALSE(idle->try_next());
}

TEST_F(EventBusTest, ASubscriberQueueIsCappedInBytesAndKeepsTheNewestEvenWhenHuge) {
  const std::string text(100 * 1024, 'x');
  const auto idle = bus_.subscribe(context_.get_executor(), 1000, std::size_t{1} << 20);
  for (int index = 0; index < 100; ++index) bus_.publish("alpha", event_kind::kModelText, {{"n", index}, {"text", text}});
  // 100 events of 100 KiB each against 1 MiB: the newest nine or so are kept.
  EXPECT_GE(idle->dropped(), 90u);
  EXPECT_LE(idle->dropped(), 92u);
  std::size_t kept_bytes = 0;
  std::int64_t last = -1;
  while (const auto event = idle->try_next()) {
    kept_bytes += approximate_bytes(*event);
    last = event->data.at("n").as_int64();
  }
  EXPECT_LE(kept_bytes, std::size_t{1} << 20);
  EXPECT_EQ(last, 99);
  // One event larger than the whole cap is still delivered.
  bus_.publish("alpha", event_kind::kModelText, {{"text", std::string(3 << 20, 'y')}});
  const auto huge = idle->try_next();
  ASSERT_TRUE(huge);
  EXPECT_EQ(huge->data.at("text").as_string().size(), std::size_t{3} << 20);
}

TEST(EventTest, ApproximateBytesCountsTheTextsItHolds) {
  Event small{.id = "e-1", .time = "t", .desk = "a", .kind = "K", .data = {}};
  Event large = small;
  large.data["text"] = std::string(50000, 'z');
  large.data["list"] = boost::json::array{std::string(1000, 'q'), 1, 2};
  EXPECT_LT(approximate_bytes(small), 1000u);
  EXPECT_GE(approximate_bytes(large), 51000u);
  EXPECT_LT(approximate_bytes(large), 53000u);
}

TEST_F(EventBusTest, DeadAndClosedSubscribersArePruned) {
  auto dropped = bus_.subscribe(context_.get_executor());
  const auto closed = bus_.subscribe(context_.get_executor());
  const auto live = bus_.subscribe(context_.get_executor());
  dropped.reset();
  closed->close();
  bus_.publish("alpha", event_kind::kDeskStarted);
  EXPECT_EQ(EventBusTestPeer::subscribers(bus_), 1u);
  EXPECT_FALSE(closed->try_next());
  EXPECT_TRUE(live->try_next());
}

TEST_F(EventBusTest, NextWakesOnAPublishFromAnotherThread) {
  const auto subscription = bus_.subscribe(context_.get_executor());
  auto next = asio::co_spawn(context_, subscription->next(), asio::use_future);
  std::thread publisher;
  // Posted after the coroutine's start, so it runs once next() is asleep on its timer.
  asio::post(context_, [&] { publisher = std::thread([&] { bus_.publish("alpha", event_kind::kToolCalled); }); });
  const bool finished = run();
  publisher.join();
  ASSERT_TRUE(finished) << "next() was not woken";
  const std::optional<Event> event = next.get();
  ASSERT_TRUE(event);
  EXPECT_EQ(event->kind, event_kind::kToolCalled);
}

TEST_F(EventBusTest, CloseWakesAWaitingNext) {
  const auto subscription = bus_.subscribe(context_.get_executor());
  auto next = asio::co_spawn(context_, subscription->next(), asio::use_future);
  std::thread closer;
  asio::post(context_, [&] { closer = std::thread([&] { subscription->close(); }); });
  const bool finished = run();
  closer.join();
  ASSERT_TRUE(finished) << "next() was not woken";
  EXPECT_FALSE(next.get());
  bus_.publish("alpha", event_kind::kDeskStarted);
  EXPECT_FALSE(subscription->try_next());
}

TEST_F(EventBusTest, ACancelledNextGivesUpAndTheSubscriptionStillWorks) {
  const auto subscription = bus_.subscribe(context_.get_executor());
  asio::cancellation_signal cancel;
  std::exception_ptr failure;
  asio::co_spawn(context_, subscription->next(),
                 asio::bind_cancellation_slot(cancel.slot(), [&](std::exception_ptr error, std::optional<Event>) {
                   failure = error;
                 }));
  asio::post(context_, [&] { cancel.emit(asio::cancellation_type::terminal); });
  ASSERT_TRUE(run());
  ASSERT_TRUE(failure);
  try {
    std::rethrow_exception(failure);
  } catch (const boost::system::system_error& error) {
    EXPECT_EQ(error.code(), asio::error::operation_aborted);
  }

  auto next = asio::co_spawn(context_, subscription->next(), asio::use_future);
  asio::post(context_, [&] { bus_.publish("alpha", event_kind::kTurnFinished); });
  ASSERT_TRUE(run());
  EXPECT_EQ(next.get()->kind, event_kind::kTurnFinished);
}

TEST_F(EventBusTest, DestroyingTheBusEndsItsSubscriptions) {
  auto bus = std::make_unique<EventBus>(clock_);
  const auto subscription = bus->subscribe(context_.get_executor());
  auto next = asio::co_spawn(context_, subscription->next(), asio::use_future);
  asio::post(context_, [&] { bus.reset(); });
  ASSERT_TRUE(run());
  EXPECT_FALSE(next.get());
}

TEST_F(EventBusTest, EightPublishingThreadsLoseNothingForAFastSubscriber) {
  constexpr int kThreads = 8;
  constexpr int kPerThread = 1000;
  const auto subscription = bus_.subscribe(context_.get_executor(), kThreads * kPerThread);
  std::vector<Event> received;
  asio::co_spawn(
      context_,
      [&]() -> asio::awaitable<void> {
        while (received.size() < kThreads * kPerThread) {
          std::optional<Event> event = co_await subscription->next();
          if (!event) co_return;
          received.push_back(std::move(*event));
        }
      },
      asio::detached);
  std::vector<std::thread> publishers;
  asio::post(context_, [&] {
    for (int thread = 0; thread < kThreads; ++thread) {
      publishers.emplace_back([&, thread] {
        for (int n = 0; n < kPerThread; ++n) {
          bus_.publish("alpha", event_kind::kModelText, {{"thread", thread}, {"n", n}});
        }
      });
    }
  });
  const bool finished = run();
  for (std::thread& publisher : publishers) publisher.join();
  ASSERT_TRUE(finished) << received.size() << " events arrived";

  ASSERT_EQ(received.size(), static_cast<std::size_t>(kThreads * kPerThread));
  EXPECT_EQ(subscription->dropped(), 0u);
  std::vector<std::int64_t> last_n(kThreads, -1);
  for (std::size_t index = 0; index < received.size(); ++index) {
    // Ids are "e-1" ... "e-8000" in the order delivered; each thread's events in its order.
    EXPECT_EQ(received[index].id, "e-" + std::to_string(index + 1));
    const auto thread = received[index].data.at("thread").as_int64();
    const auto n = received[index].data.at("n").as_int64();
    EXPECT_EQ(n, last_n[static_cast<std::size_t>(thread)] + 1);
    last_n[static_cast<std::size_t>(thread)] = n;
  }
}

}  // namespace
}  // namespace deskd::desk
