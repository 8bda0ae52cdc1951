// SteeringInbox: messages wait for the running turn in order, every move is an event,
// and nothing is lost between threads.

#include "runner/desk/steering_inbox.h"

#include <boost/json.hpp>

#include <set>
#include <thread>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "base/clock.h"
#include "runner/events/event_bus.h"

namespace deskd::desk {
namespace {

using ::testing::ElementsAre;

class SteeringInboxTest : public ::testing::Test {
 protected:
  void SetUp() override {
    bus_.add_sink([this](const Event& event) {
      const std::lock_guard lock(events_mutex_);
      events_.push_back(event.kind + " " + std::string(event.data.at("text").as_string()));
      EXPECT_EQ(event.desk, "alpha");
    });
  }
  static Trigger message(std::string text) {
    Trigger trigger;
    trigger.id = make_trigger_id();
    trigger.desk = "alpha";
    trigger.text = std::move(text);
    trigger.sender = "asha";
    return trigger;
  }
  static std::vector<std::string> texts(const std::vector<Trigger>& triggers) {
    std::vector<std::string> result;
    for (const Trigger& trigger : triggers) result.push_back(trigger.text);
    return result;
  }

  ManualClock clock_{std::chrono::system_clock::time_point{}};
  EventBus bus_{clock_};
  SteeringInbox inbox_{
      [this](const char* kind, boost::json::object data) { bus_.publish("alpha", kind, std::move(data)); }};
  std::mutex events_mutex_;
  std::vector<std::string> events_;
};

TEST_F(SteeringInboxTest, TakeAllReturnsMessagesOldestFirstAndPublishesEachMove) {
  inbox_.put(message("one"));
  inbox_.put(message("two"));
  inbox_.put(message("three"));
  EXPECT_EQ(inbox_.size(), 3u);
  EXPECT_THAT(texts(inbox_.take_all()), ElementsAre("one", "two", "three"));
  EXPECT_EQ(inbox_.size(), 0u);
  EXPECT_TRUE(inbox_.take_all().empty());
  EXPECT_THAT(events_, ElementsAre("STEERING_QUEUED one", "STEERING_QUEUED two", "STEERING_QUEUED three",
                                   "STEERING_DELIVERED one", "STEERING_DELIVERED two",
                                   "STEERING_DELIVERED three"));
}

TEST_F(SteeringInboxTest, EventsNameTheTriggerAndItsSender) {
  const auto subscription = bus_.subscribe(boost::asio::system_executor());
  const Trigger trigger = message("sell half");
  inbox_.put(trigger);
  const std::optional<Event> queued = subscription->try_next();
  ASSERT_TRUE(queued);
  EXPECT_EQ(queued->kind, event_kind::kSteeringQueued);
  EXPECT_EQ(queued->data.at("trigger").as_string(), trigger.id);
  EXPECT_EQ(queued->data.at("sender").as_string(), "asha");
}

TEST_F(SteeringInboxTest, UndeliveredMessagesComeBackWithoutADeliveredEvent) {
  inbox_.put(message("one"));
  inbox_.put(message("two"));
  const std::vector<Trigger> undelivered = inbox_.take_undelivered();
  EXPECT_THAT(texts(undelivered), ElementsAre("one", "two"));
  EXPECT_EQ(undelivered[0].sender, "asha");
  EXPECT_EQ(inbox_.size(), 0u);
  EXPECT_THAT(events_, ElementsAre("STEERING_QUEUED one", "STEERING_QUEUED two"));
}

TEST_F(SteeringInboxTest, MessagesFromManyThreadsAreTakenOnceEachInTheirOrder) {
  constexpr int kThreads = 4;
  constexpr int kPerThread = 250;
  std::atomic<int> putters_left{kThreads};
  std::vector<std::thread> putters;
  for (int thread = 0; thread < kThreads; ++thread) {
    putters.emplace_back([&, thread] {
      for (int n = 0; n < kPerThread; ++n) inbox_.put(message(std::to_string(thread) + ":" + std::to_string(n)));
      --putters_left;
    });
  }
  std::vector<Trigger> taken;
  // The turn's side: tool rounds take what has arrived while the users keep writing.
  while (putters_left > 0) {
    for (Trigger& trigger : inbox_.take_all()) taken.push_back(std::move(trigger));
  }
  for (std::thread& putter : putters) putter.join();
  for (Trigger& trigger : inbox_.take_undelivered()) taken.push_back(std::move(trigger));

  ASSERT_EQ(taken.size(), static_cast<std::size_t>(kThreads * kPerThread));
  std::set<std::string> ids;
  std::vector<int> last(kThreads, -1);
  for (const Trigger& trigger : taken) {
    ids.insert(trigger.id);
    const auto colon = trigger.text.find(':');
    const int thread = std::stoi(trigger.text.substr(0, colon));
    const int n = std::stoi(trigger.text.substr(colon + 1));
    EXPECT_EQ(n, last[static_cast<std::size_t>(thread)] + 1);
    last[static_cast<std::size_t>(thread)] = n;
  }
  EXPECT_EQ(ids.size(), taken.size());
  const std::lock_guard lock(events_mutex_);
  EXPECT_EQ(std::count_if(events_.begin(), events_.end(),
                          [](const std::string& event) { return event.starts_with("STEERING_QUEUED"); }),
            kThreads * kPerThread);
}

}  // namespace
}  // namespace deskd::desk
