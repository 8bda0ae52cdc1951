#include "base/task_group.h"

#include <gtest/gtest.h>

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <chrono>
#include <stdexcept>
#include <string>
#include <vector>

#include "base/asio_await.h"

namespace deskd {
namespace {

namespace asio = boost::asio;
using std::chrono::hours;

// Runs `main` to its end on `io`; fails the test if it threw or never ended.
void run_to_end(asio::io_context& io, asio::awaitable<void> main) {
  bool ended = false;
  asio::co_spawn(io, std::move(main), [&](std::exception_ptr escaped) {
    ended = true;
    if (escaped) std::rethrow_exception(escaped);
  });
  io.run_for(std::chrono::seconds(10));
  EXPECT_TRUE(ended);
}

// Waits an hour unless cancelled first; counts the children that got to their end.
asio::awaitable<void> wait_long(int& ended) {
  asio::steady_timer timer(co_await asio::this_coro::executor, hours(1));
  (void)co_await timer.async_wait(kAwait);
  ++ended;
}

TEST(TaskGroupTest, WaitingOnAnEmptyGroupReturnsAtOnce) {
  asio::io_context io;
  TaskGroup group(io.get_executor(), {});
  bool waited = false;
  run_to_end(io, [&]() -> asio::awaitable<void> {
    co_await group.async_wait();
    waited = true;
  }());
  EXPECT_TRUE(waited);
}

TEST(TaskGroupTest, CancellingAllThenWaitingReturnsOnceEveryChildHasEnded) {
  asio::io_context io;
  TaskGroup group(io.get_executor(), {});
  int ended = 0;
  for (int child = 0; child < 3; ++child) group.spawn(wait_long(ended));
  EXPECT_EQ(group.size(), 3u);
  const auto started = std::chrono::steady_clock::now();
  run_to_end(io, [&]() -> asio::awaitable<void> {
    group.emit(asio::cancellation_type::terminal);
    co_await group.async_wait();
    EXPECT_EQ(ended, 3);
    EXPECT_TRUE(group.empty());
  }());
  EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(5));
}

TEST(TaskGroupTest, WaitsForChildrenThatEndOnTheirOwn) {
  asio::io_context io;
  TaskGroup group(io.get_executor(), {});
  std::vector<int> order;
  for (int child = 0; child < 3; ++child) {
    group.spawn([](std::vector<int>& out, int number) -> asio::awaitable<void> {
      asio::steady_timer timer(co_await asio::this_coro::executor, std::chrono::milliseconds(5 * (3 - number)));
      (void)co_await timer.async_wait(kAwait);
      out.push_back(number);
    }(order, child));
  }
  run_to_end(io, [&]() -> asio::awaitable<void> {
    co_await group.async_wait();
    EXPECT_EQ(order, (std::vector<int>{2, 1, 0}));
  }());
}

TEST(TaskGroupTest, AChildThatThrowsIsReportedAndTheOthersGoOn) {
  asio::io_context io;
  std::vector<std::string> reported;
  TaskGroup group(io.get_executor(), [&](std::exception_ptr escaped) {
    try {
      std::rethrow_exception(escaped);
    } catch (const std::exception& error) {
      reported.push_back(error.what());
    }
  });
  int ended = 0;
  group.spawn(wait_long(ended));
  group.spawn([]() -> asio::awaitable<void> {
    co_await asio::post(co_await asio::this_coro::executor, asio::use_awaitable);
    throw std::runtime_error("the child failed");
  }());
  run_to_end(io, [&]() -> asio::awaitable<void> {
    // Let the thrower end first: the long one still runs, and the group still holds it.
    for (int turn = 0; turn < 10 && reported.empty(); ++turn) {
      co_await asio::post(co_await asio::this_coro::executor, asio::use_awaitable);
    }
    EXPECT_EQ(reported, std::vector<std::string>{"the child failed"});
    EXPECT_EQ(group.size(), 1u);
    group.emit(asio::cancellation_type::terminal);
    co_await group.async_wait();
    EXPECT_EQ(ended, 1);
  }());
}

TEST(TaskGroupTest, ManyShortChildrenAreForgottenOnceEnded) {
  asio::io_context io;
  TaskGroup group(io.get_executor(), {});
  int ended = 0;
  run_to_end(io, [&]() -> asio::awaitable<void> {
    for (int round = 0; round < 100; ++round) {
      for (int child = 0; child < 100; ++child) {
        group.spawn([](int& count) -> asio::awaitable<void> {
          ++count;
          co_return;
        }(ended));
      }
      co_await group.async_wait();
      // Each round's children are gone before the next starts: the group never holds more.
      EXPECT_EQ(group.size(), 0u);
    }
  }());
  EXPECT_EQ(ended, 100 * 100);
}

TEST(TaskGroupTest, CancellingTheWaiterEndsTheWaitNotTheChildren) {
  asio::io_context io;
  TaskGroup group(io.get_executor(), {});
  int ended = 0;
  group.spawn(wait_long(ended));
  asio::cancellation_signal stop_waiting;
  bool aborted = false;
  asio::co_spawn(io, group.async_wait(),
                 asio::bind_cancellation_slot(stop_waiting.slot(),
                                              [&](std::exception_ptr escaped) { aborted = escaped != nullptr; }));
  asio::post(io, [&] { stop_waiting.emit(asio::cancellation_type::terminal); });
  io.run_for(std::chrono::milliseconds(200));
  EXPECT_TRUE(aborted);
  EXPECT_EQ(group.size(), 1u);
  EXPECT_EQ(ended, 0);
  group.emit(asio::cancellation_type::terminal);
  io.restart();
  io.run_for(std::chrono::seconds(5));
  EXPECT_EQ(ended, 1);
  EXPECT_TRUE(group.empty());
}

}  // namespace
}  // namespace deskd
