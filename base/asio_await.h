#pragma once
// The completion token and the timeout every coroutine in deskd uses, declared once.

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <chrono>

namespace deskd {

/// co_await op(..., kAwait) gives (error_code, results...) as a tuple instead of throwing:
/// each failure is handled where it happens, and none escapes a coroutine as an exception.
inline constexpr auto kAwait = boost::asio::as_tuple(boost::asio::use_awaitable);

/// Waits `timeout` unless cancelled first; `operation || expire_after(t)` bounds an operation.
inline boost::asio::awaitable<void> expire_after(std::chrono::milliseconds timeout) {
  boost::asio::steady_timer timer(co_await boost::asio::this_coro::executor, timeout);
  (void)co_await timer.async_wait(kAwait);
}

}  // namespace deskd
