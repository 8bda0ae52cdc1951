#include "runner/model/tool_round.h"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/json.hpp>

#include "base/exception_text.h"
#include "runner/tools/tool_registry.h"

namespace deskd::model {

namespace asio = boost::asio;
using asio::awaitable;

namespace {

bool runs_beside_others(const tools::ToolRegistry* registry, const ToolCall& call) {
  const tools::Tool* tool = registry != nullptr ? registry->find(call.name) : nullptr;
  return tool != nullptr && tool->runs_beside_others();
}

// Calls that run at once, each in a coroutine of its own (so that each has its own
// cancellation: a /stop reaches every one, and each may tidy up before it ends).
awaitable<void> run_together(std::shared_ptr<tools::ToolRegistry> registry, std::span<const ToolCall> calls,
                             std::span<tools::ToolResult> results, const ToolRoundWatch& watch, std::size_t first) {
  struct Together {
    explicit Together(const asio::any_io_executor& executor)
        : all_done(executor, asio::steady_timer::time_point::max()) {}
    asio::steady_timer all_done;
    std::size_t running = 0;
    std::vector<tools::ToolResult> results;
    std::vector<std::shared_ptr<asio::cancellation_signal>> stops;
  };
  const auto executor = co_await asio::this_coro::executor;
  auto together = std::make_shared<Together>(executor);
  together->running = calls.size();
  together->results.resize(calls.size());
  for (std::size_t index = 0; index < calls.size(); ++index) {
    if (watch.started) watch.started(first + index);
    auto stop = std::make_shared<asio::cancellation_signal>();
    together->stops.push_back(stop);
    asio::co_spawn(executor, registry->call(calls[index].name, calls[index].input),
                   asio::bind_cancellation_slot(
                       stop->slot(), [together, index](std::exception_ptr error, tools::ToolResult result) {
                         together->results[index] =
                             error ? tools::ToolResult::failure("The tool call ended: " + describe_exception(error))
                                   : std::move(result);
                         if (--together->running == 0) together->all_done.cancel();
                       }));
  }
  // Every call is waited for, even once the round is cancelled: they use `calls`.
  co_await asio::this_coro::throw_if_cancelled(false);
  bool cancelled = false;
  while (together->running > 0) {
    (void)co_await together->all_done.async_wait(asio::as_tuple(asio::use_awaitable));
    if (!cancelled && (co_await asio::this_coro::cancellation_state).cancelled() != asio::cancellation_type::none) {
      cancelled = true;
      co_await asio::this_coro::reset_cancellation_state();
      for (const auto& stop : together->stops) stop->emit(asio::cancellation_type::terminal);
    }
  }
  co_await asio::this_coro::throw_if_cancelled(true);
  for (std::size_t index = 0; index < calls.size(); ++index) {
    results[index] = std::move(together->results[index]);
    if (watch.finished) watch.finished(first + index, results[index]);
  }
  if (cancelled) throw boost::system::system_error(asio::error::operation_aborted);
}

}  // namespace

awaitable<std::vector<tools::ToolResult>> run_tool_round(std::shared_ptr<tools::ToolRegistry> registry,
                                                         std::span<const ToolCall> calls, const ToolRoundWatch& watch) {
  std::vector<tools::ToolResult> results(calls.size(), tools::ToolResult::failure("This desk has no tools."));
  std::size_t index = 0;
  while (index < calls.size()) {
    if (!registry) {
      if (watch.started) watch.started(index);
      if (watch.finished) watch.finished(index, results[index]);
      ++index;
      continue;
    }
    std::size_t end = index;
    while (end < calls.size() && runs_beside_others(registry.get(), calls[end])) ++end;
    if (end > index) {
      co_await run_together(registry, calls.subspan(index, end - index),
                            std::span<tools::ToolResult>(results).subspan(index, end - index), watch, index);
      index = end;
      continue;
    }
    if (watch.started) watch.started(index);
    try {
      results[index] = co_await registry->call(calls[index].name, calls[index].input);
    } catch (const boost::system::system_error& error) {
      if (error.code() != asio::error::operation_aborted) throw;
      // Stopped (a /stop, deskd stopping): the call still ends as one, as a call run
      // together with others does, and the round ends with the cancellation.
      results[index] = tools::ToolResult::failure("The tool call ended: " + std::string(error.what()));
      if (watch.finished) watch.finished(index, results[index]);
      throw;
    }
    if (watch.finished) watch.finished(index, results[index]);
    ++index;
  }
  co_return results;
}

}  // namespace deskd::model
