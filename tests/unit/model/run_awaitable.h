#pragma once
// The model tests' way to call deskd's coroutines from a plain test body: runs `operation`
// to its end on `context` and returns its value (or rethrows what it threw).

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_future.hpp>

#include <utility>

namespace deskd::model {

template <typename T>
T wait(boost::asio::io_context& context, boost::asio::awaitable<T> operation) {
  auto future = boost::asio::co_spawn(context, std::move(operation), boost::asio::use_future);
  context.restart();
  context.run();
  return future.get();
}

}  // namespace deskd::model
