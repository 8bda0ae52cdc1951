#include "base/task_group.h"

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/error.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/system/system_error.hpp>

#include "base/asio_await.h"

namespace deskd {

namespace asio = boost::asio;

TaskGroup::State::State(asio::any_io_executor executor_in, ReportEscaped report_in)
    : executor(std::move(executor_in)),
      report_escaped(std::move(report_in)),
      all_ended(executor, asio::steady_timer::time_point::max()) {}

TaskGroup::TaskGroup(asio::any_io_executor executor, ReportEscaped report_escaped)
    : state_(std::make_shared<State>(std::move(executor), std::move(report_escaped))) {}

void TaskGroup::spawn(asio::awaitable<void> child) {
  auto state = state_;
  auto& signal = state->children.emplace_back();
  const auto place = std::prev(state->children.end());
  asio::co_spawn(state->executor, std::move(child),
                 asio::bind_cancellation_slot(signal.slot(), [state, place](std::exception_ptr escaped) {
                   // The child's cancellation handler lives in its signal and co_spawn may still
                   // be calling this from inside it: the signal goes in a handler of its own.
                   asio::post(state->executor, [state, place, escaped] {
                     state->children.erase(place);
                     if (escaped && state->report_escaped) state->report_escaped(escaped);
                     if (state->children.empty()) state->all_ended.cancel();
                   });
                 }));
}

void TaskGroup::emit(asio::cancellation_type type) {
  // Emitting never ends a child in line (its end is posted), so the list holds still.
  for (auto& signal : state_->children) signal.emit(type);
}

std::size_t TaskGroup::size() const { return state_->children.size(); }

asio::awaitable<void> TaskGroup::async_wait() {
  auto state = state_;
  while (!state->children.empty()) {
    (void)co_await state->all_ended.async_wait(kAwait);
    if ((co_await asio::this_coro::cancellation_state).cancelled() != asio::cancellation_type::none) {
      if (co_await asio::this_coro::throw_if_cancelled())
        throw boost::system::system_error(asio::error::operation_aborted);
      co_return;
    }
  }
}

}  // namespace deskd
