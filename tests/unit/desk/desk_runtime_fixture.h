#pragma once
// The DeskRuntime tests' fixture: a controllable fake turn runner, a desk on a
// single-threaded io_context, and the events it published.

#include <boost/asio.hpp>
#include <algorithm>
#include <filesystem>

#include <gtest/gtest.h>

#include "runner/desk/desk_runtime.h"

namespace deskd::desk::testing {

namespace asio = boost::asio;

// A turn runner whose turns wait until released (or run at once), and that picks up
// steering when released.
class FakeTurnRunner final : public TurnRunner {
 public:
  explicit FakeTurnRunner(asio::io_context& context) : release_(context, asio::steady_timer::time_point::max()) {}
  asio::awaitable<TurnOutcome> run_turn(std::string message, TurnContext& context) override {
    messages.push_back(message);
    ++turns_started;
    if (block) {
      // release() cancels the timer; a /stop cancels the coroutine, which must then throw.
      co_await release_.async_wait(asio::as_tuple(asio::use_awaitable));
      if ((co_await asio::this_coro::cancellation_state).cancelled() != asio::cancellation_type::none) {
        throw boost::system::system_error(asio::error::operation_aborted);
      }
    }
    if (take_steering) {
      for (const Trigger& steering : context.take_steering()) steered.push_back(steering.text);
    }
    context.publish("MODEL_TEXT", {{"text", "thinking"}});
    co_return TurnOutcome{"reply to " + message.substr(message.rfind('\n') + 1), cut_reason};
  }
  asio::awaitable<std::string> side_question(std::string question) override { co_return "side answer: " + question; }
  asio::awaitable<std::string> summarise() override {
    ++summaries;
    co_return "the day in brief";
  }
  void resume_session(const Session& session) override { resumed.push_back(session.id); }
  asio::awaitable<void> close() override {
    closed = true;
    co_return;
  }
  void release() {
    release_.cancel();
    release_.expires_at(asio::steady_timer::time_point::max());
  }

  bool block = false;
  bool take_steering = true;
  std::string cut_reason;  ///< what the turns' outcomes say cut their replies
  int turns_started = 0;
  int summaries = 0;
  bool closed = false;
  std::vector<std::string> messages, steered, resumed;

 private:
  asio::steady_timer release_;
};

class DeskRuntimeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/deskd-desk-XXXXXX";
    state_ = ::mkdtemp(pattern);
    subscription_ = bus_.subscribe(context_.get_executor(), 100000);
  }
  void TearDown() override {
    stop_desk();
    std::filesystem::remove_all(state_);
  }

  void start_desk(DeskParts parts = {}, DeskSettings settings = {}) {
    if (settings.name.empty()) settings.name = "nifty";
    desk_ = std::make_unique<DeskRuntime>(context_.get_executor(), settings, bus_, runner_, clock_, std::move(parts));
    asio::co_spawn(context_, desk_->run(), asio::bind_cancellation_slot(stop_.slot(), [this](std::exception_ptr) { run_ended_ = true; }));
    wait_for("DESK_STARTED");
  }
  void stop_desk() {
    if (!desk_ || run_ended_) return;
    stop_.emit(asio::cancellation_type::terminal);
    run_until([&] { return run_ended_; });
  }

  // Runs the io_context until `done` holds (or 5 s pass, which fails the test).
  template <typename Predicate>
  void run_until(Predicate done) {
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (!done() && std::chrono::steady_clock::now() < give_up) {
      context_.restart();
      context_.run_for(std::chrono::milliseconds(5));
      while (auto event = subscription_->try_next()) events_.push_back(std::move(*event));
    }
    ASSERT_TRUE(done()) << "timed out";
  }
  const Event* find(const std::string& kind, std::size_t skip = 0) const {
    for (const Event& event : events_) {
      if (event.kind == kind && skip-- == 0) return &event;
    }
    return nullptr;
  }
  std::size_t count(const std::string& kind) const {
    return std::count_if(events_.begin(), events_.end(), [&](const Event& event) { return event.kind == kind; });
  }
  const Event& wait_for(const std::string& kind, std::size_t skip = 0) {
    run_until([&] { return find(kind, skip) != nullptr; });
    return *find(kind, skip);
  }
  Trigger message(std::string text, std::string desk = "nifty") {
    Trigger trigger;
    trigger.id = make_trigger_id();
    trigger.desk = std::move(desk);
    trigger.text = std::move(text);
    trigger.sender = "ravi";
    trigger.received = clock_.now();
    return trigger;
  }
  std::string reply_of(const Event& event) const { return std::string(event.data.at("reply").as_string()); }

  // Monday 30 November 2026, 09:14:05 IST.
  ManualClock clock_{Clock::TimePoint{std::chrono::seconds(1796010245)}};
  asio::io_context context_;
  EventBus bus_{clock_};
  std::shared_ptr<EventSubscription> subscription_;
  std::shared_ptr<FakeTurnRunner> runner_ = std::make_shared<FakeTurnRunner>(context_);
  std::unique_ptr<DeskRuntime> desk_;
  asio::cancellation_signal stop_;
  bool run_ended_ = false;
  std::vector<Event> events_;
  std::filesystem::path state_;
};

}  // namespace deskd::desk::testing
