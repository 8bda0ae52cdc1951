#include "bench/fresh_terminal.h"

#include <boost/asio.hpp>

#include <algorithm>
#include <memory>

namespace deskd::bench {
namespace {

namespace asio = boost::asio;
using Clock = std::chrono::steady_clock;

double milliseconds_since(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

// Wakes every millisecond and records how late it woke: a launch that blocks the loop
// for its whole set-up shows up here as a stall of that length.
struct StallWatch {
  bool stop = false;
  double longest_ms = 0;
};

asio::awaitable<void> watch_stalls(std::shared_ptr<StallWatch> watch) {
  asio::steady_timer timer(co_await asio::this_coro::executor);
  while (!watch->stop) {
    const auto due = Clock::now() + std::chrono::milliseconds(1);
    timer.expires_at(due);
    co_await timer.async_wait(asio::use_awaitable);
    watch->longest_ms = std::max(watch->longest_ms, milliseconds_since(due));
  }
}

}  // namespace

asio::awaitable<FreshTimes> time_fresh_sessions(const sandbox::SandboxSpec& spec, long count, double timeout_seconds,
                                                std::size_t maximum_characters) {
  const auto executor = co_await asio::this_coro::executor;
  auto watch = std::make_shared<StallWatch>();
  asio::co_spawn(executor, watch_stalls(watch), asio::detached);
  FreshTimes times;
  for (long index = 0; index < count && times.problem.empty(); ++index) {
    tools::BashSession fresh(executor, spec, timeout_seconds, maximum_characters);
    const auto start = Clock::now();
    const tools::CommandOutcome first = co_await fresh.run("true");
    times.milliseconds.push_back(milliseconds_since(start));
    if (first.exit_status != 0) times.problem = "a fresh session does not run `true`: " + first.output;
    co_await fresh.close();
  }
  watch->stop = true;
  times.longest_loop_stall_ms = watch->longest_ms;
  co_return times;
}

asio::awaitable<FreshTimes> time_after_restart(tools::BashSession& session, long count,
                                               std::chrono::milliseconds think) {
  auto watch = std::make_shared<StallWatch>();
  asio::co_spawn(co_await asio::this_coro::executor, watch_stalls(watch), asio::detached);
  asio::steady_timer pause(co_await asio::this_coro::executor);
  FreshTimes times;
  for (long index = 0; index < count && times.problem.empty(); ++index) {
    co_await session.restart();
    pause.expires_after(think);
    co_await pause.async_wait(asio::use_awaitable);
    const auto start = Clock::now();
    const tools::CommandOutcome next = co_await session.run("true");
    times.milliseconds.push_back(milliseconds_since(start));
    if (next.exit_status != 0) times.problem = "run(\"true\") after a restart failed: " + next.output;
  }
  watch->stop = true;
  times.longest_loop_stall_ms = watch->longest_ms;
  co_return times;
}

}  // namespace deskd::bench
