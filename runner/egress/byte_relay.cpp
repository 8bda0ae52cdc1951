#include "runner/egress/byte_relay.h"

#include <fcntl.h>
#include <unistd.h>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>

#include <cerrno>
#include <chrono>
#include <vector>

#include "base/asio_await.h"
#include "base/unique_fd.h"
#include "runner/egress/api_gate.h"
#include "runner/egress/proxy_shared.h"

namespace deskd::egress {
namespace {

namespace asio = boost::asio;
using asio::awaitable;
using asio::ip::tcp;
using namespace asio::experimental::awaitable_operators;

// The most one splice moves, and the pipe's size: kernel pages, not deskd's heap.
constexpr std::size_t kChunkBytes = 256 * 1024;
// The copying fallback's buffer, when a pipe cannot be had.
constexpr std::size_t kCopyBufferBytes = 64 * 1024;

// When a byte last moved either way, for the idle timeout.
struct Activity {
  std::chrono::steady_clock::time_point last = std::chrono::steady_clock::now();
};

struct Direction {
  ProxyShared& shared;
  tcp::socket& from;
  tcp::socket& to;
  const std::string& host;
  std::uint16_t port;
  Activity& activity;

  void close_both() {
    boost::system::error_code ignored;
    from.close(ignored);
    to.close(ignored);
  }
  void pass_end() {
    boost::system::error_code ignored;
    to.shutdown(tcp::socket::shutdown_send, ignored);
  }
  bool charge(std::size_t count) {
    activity.last = std::chrono::steady_clock::now();
    if (shared.charge(count)) return true;
    shared.report(host, port,
                  "the desk's egress byte budget (" + std::to_string(shared.settings.limits.bytes >> 20) +
                      " MiB, egress_mb) is spent");
    close_both();
    return false;
  }
};

awaitable<void> copy(Direction direction) {
  std::vector<char> buffer(kCopyBufferBytes);
  for (;;) {
    auto [read_error, count] = co_await direction.from.async_read_some(asio::buffer(buffer), kAwait);
    if (read_error) {
      if (read_error == asio::error::eof) direction.pass_end();
      else direction.close_both();
      co_return;
    }
    if (!direction.charge(count)) co_return;
    auto [write_error, written] = co_await asio::async_write(direction.to, asio::buffer(buffer.data(), count), kAwait);
    if (write_error) {
      direction.close_both();
      co_return;
    }
  }
}

// The desk's bytes towards a host not gated for them, when the desk holds placeholders: read
// into deskd (no splice) so that each chunk, with the tail of the one before, is searched
// for a placeholder before it is passed on. One found closes both ends: a leak attempt.
awaitable<void> copy_watching_for_placeholders(Direction direction, const ApiGate& gate) {
  std::vector<char> buffer(kCopyBufferBytes);
  const std::size_t keep = gate.longest_placeholder();
  std::string seen;  // the tail of what passed, then the new chunk
  for (;;) {
    auto [read_error, count] = co_await direction.from.async_read_some(asio::buffer(buffer), kAwait);
    if (read_error) {
      if (read_error == asio::error::eof) direction.pass_end();
      else direction.close_both();
      co_return;
    }
    seen.append(buffer.data(), count);
    if (auto leaked = gate.placeholder_in(seen)) {
      direction.shared.report(direction.host, direction.port,
                              "the connection carries the placeholder of " + *leaked +
                                  ", which only its API's origins may get: a leak attempt");
      direction.close_both();
      co_return;
    }
    if (seen.size() > keep) seen.erase(0, seen.size() - keep);
    if (!direction.charge(count)) co_return;
    auto [write_error, written] = co_await asio::async_write(direction.to, asio::buffer(buffer.data(), count), kAwait);
    if (write_error) {
      direction.close_both();
      co_return;
    }
  }
}

// splice(2) socket -> pipe -> socket with both sockets non-blocking, waiting with Asio's
// reactor for readiness in between.
awaitable<void> splice_or_copy(Direction direction) {
  int ends[2];
  if (::pipe2(ends, O_NONBLOCK | O_CLOEXEC) != 0) {
    co_await copy(direction);
    co_return;
  }
  UniqueFd pipe_read(ends[0]);
  UniqueFd pipe_write(ends[1]);
  (void)::fcntl(pipe_write.get(), F_SETPIPE_SZ, static_cast<int>(kChunkBytes));  // a smaller pipe only slows it
  boost::system::error_code error;
  direction.from.native_non_blocking(true, error);
  if (!error) direction.to.native_non_blocking(true, error);
  if (error) {
    co_await copy(direction);
    co_return;
  }
  for (;;) {
    const ssize_t taken = ::splice(direction.from.native_handle(), nullptr, pipe_write.get(), nullptr, kChunkBytes,
                                   SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
    if (taken == 0) {
      direction.pass_end();
      co_return;
    }
    if (taken < 0) {
      if (errno == EINTR) continue;
      if (errno != EAGAIN) {
        direction.close_both();
        co_return;
      }
      auto [waited] = co_await direction.from.async_wait(tcp::socket::wait_read, kAwait);
      if (waited) {
        direction.close_both();
        co_return;
      }
      continue;
    }
    if (!direction.charge(static_cast<std::size_t>(taken))) co_return;
    std::size_t left = static_cast<std::size_t>(taken);
    while (left > 0) {
      const ssize_t given = ::splice(pipe_read.get(), nullptr, direction.to.native_handle(), nullptr, left,
                                     SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
      if (given > 0) {
        left -= static_cast<std::size_t>(given);
        continue;
      }
      if (given < 0 && errno == EINTR) continue;
      if (given < 0 && errno == EAGAIN) {
        auto [waited] = co_await direction.to.async_wait(tcp::socket::wait_write, kAwait);
        if (!waited) continue;
      }
      direction.close_both();
      co_return;
    }
  }
}

// Closes both sockets once nothing has moved for the desk's egress_idle_seconds; ends
// quietly when the relay ends first (the || below cancels its wait).
awaitable<void> close_when_idle(ProxyShared& shared, tcp::socket& client, tcp::socket& upstream, Activity& activity) {
  const auto idle = std::chrono::seconds(shared.settings.limits.idle_seconds);
  asio::steady_timer timer(co_await asio::this_coro::executor);
  for (;;) {
    const auto deadline = activity.last + idle;
    if (std::chrono::steady_clock::now() >= deadline) break;
    timer.expires_at(deadline);
    if (auto [waited] = co_await timer.async_wait(kAwait); waited) co_return;
  }
  boost::system::error_code ignored;
  client.close(ignored);
  upstream.close(ignored);
}

}  // namespace

awaitable<void> relay_both_ways(ProxyShared& shared, tcp::socket& client, tcp::socket& upstream, std::string host,
                                std::uint16_t port) {
  Activity activity;
  if (shared.settings.gate) {
    co_await ((copy_watching_for_placeholders(Direction{shared, client, upstream, host, port, activity},
                                              *shared.settings.gate) &&
               splice_or_copy(Direction{shared, upstream, client, host, port, activity})) ||
              close_when_idle(shared, client, upstream, activity));
    co_return;
  }
  co_await ((splice_or_copy(Direction{shared, client, upstream, host, port, activity}) &&
             splice_or_copy(Direction{shared, upstream, client, host, port, activity})) ||
            close_when_idle(shared, client, upstream, activity));
}

}  // namespace deskd::egress
