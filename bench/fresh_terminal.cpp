#include "bench/fresh_terminal.h"

#include <boost/asio.hpp>

#include <algorithm>
#include <memory>
#include <tuple>
#include <utility>

namespace deskd::bench {
namespace {

namespace asio = boost::asio;
using Clock = std::chrono::steady_clock;

double milliseconds_between(Clock::time_point start, Clock::time_point end) {
  return std::chrono::duration<double, std::milli>(end - start).count();
}

// Wakes every millisecond and keeps each wake-up that came late: a step that blocks the
// loop (a launch waiting for its whole set-up, a stop reaping a sandbox) shows up as a late
// wake-up that was due while the step ran.
struct StallWatch {
  bool stop = false;
  std::vector<std::pair<Clock::time_point, double>> late;  // when it was due, how late (ms)
};

asio::awaitable<void> watch_stalls(std::shared_ptr<StallWatch> watch) {
  asio::steady_timer timer(co_await asio::this_coro::executor);
  while (!watch->stop) {
    const auto due = Clock::now() + std::chrono::milliseconds(1);
    timer.expires_at(due);
    co_await timer.async_wait(asio::use_awaitable);
    const double late_ms = milliseconds_between(due, Clock::now());
    if (late_ms > 0.5) watch->late.emplace_back(due, late_ms);
  }
}

// The steps of a measurement, by kind: starting terminals (and running the command) or
// stopping them.
struct Steps {
  std::vector<std::pair<Clock::time_point, Clock::time_point>> starting, stopping;
};

// For each of `spans`, the longest late wake-up that was due during it; then the median
// of those (one step's typical hold on the loop) and their maximum.
std::pair<double, double> stalls_in(const StallWatch& watch,
                                    const std::vector<std::pair<Clock::time_point, Clock::time_point>>& spans) {
  std::vector<double> longest(spans.size(), 0.0);
  for (const auto& [due, late_ms] : watch.late) {
    for (std::size_t index = 0; index < spans.size(); ++index) {
      if (due >= spans[index].first && due < spans[index].second) longest[index] = std::max(longest[index], late_ms);
    }
  }
  if (longest.empty()) return {0, 0};
  std::sort(longest.begin(), longest.end());
  return {longest[longest.size() / 2], longest.back()};
}

void judge(FreshTimes& times, const StallWatch& watch, const Steps& steps) {
  std::tie(times.median_start_stall_ms, times.longest_start_stall_ms) = stalls_in(watch, steps.starting);
  std::tie(times.median_stop_stall_ms, times.longest_stop_stall_ms) = stalls_in(watch, steps.stopping);
}

}  // namespace

asio::awaitable<FreshTimes> time_fresh_sessions(const sandbox::SandboxSpec& spec, long count, double timeout_seconds,
                                                std::size_t maximum_characters) {
  const auto executor = co_await asio::this_coro::executor;
  auto watch = std::make_shared<StallWatch>();
  asio::co_spawn(executor, watch_stalls(watch), asio::detached);
  asio::steady_timer settle(executor);
  FreshTimes times;
  Steps steps;
  for (long index = 0; index < count && times.problem.empty(); ++index) {
    tools::BashSession fresh(executor, spec, timeout_seconds, maximum_characters);
    const auto start = Clock::now();
    const tools::CommandOutcome first = co_await fresh.run("true");
    const auto ran = Clock::now();
    times.milliseconds.push_back(milliseconds_between(start, ran));
    steps.starting.emplace_back(start, ran);
    if (first.exit_status != 0) times.problem = "a fresh session does not run `true`: " + first.output;
    co_await fresh.close();
    steps.stopping.emplace_back(ran, Clock::now());
    settle.expires_after(std::chrono::milliseconds(2));  // the watch wakes between the steps
    co_await settle.async_wait(asio::use_awaitable);
  }
  watch->stop = true;
  judge(times, *watch, steps);
  co_return times;
}

asio::awaitable<FreshTimes> time_after_restart(tools::BashSession& session, long count,
                                               std::chrono::milliseconds think) {
  auto watch = std::make_shared<StallWatch>();
  asio::co_spawn(co_await asio::this_coro::executor, watch_stalls(watch), asio::detached);
  asio::steady_timer pause(co_await asio::this_coro::executor);
  FreshTimes times;
  Steps steps;
  for (long index = 0; index < count && times.problem.empty(); ++index) {
    const auto restarting = Clock::now();
    co_await session.restart();  // stops the terminal; the next one starts in the background
    const auto restarted = Clock::now();
    steps.stopping.emplace_back(restarting, restarted);
    pause.expires_after(think);
    co_await pause.async_wait(asio::use_awaitable);
    const auto start = Clock::now();
    const tools::CommandOutcome next = co_await session.run("true");
    const auto ran = Clock::now();
    steps.starting.emplace_back(restarted, ran);
    times.milliseconds.push_back(milliseconds_between(start, ran));
    if (next.exit_status != 0) times.problem = "run(\"true\") after a restart failed: " + next.output;
  }
  watch->stop = true;
  judge(times, *watch, steps);
  co_return times;
}

}  // namespace deskd::bench
