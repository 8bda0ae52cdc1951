#pragma once
// HttpConnection: one TCP connection to an origin server, direct or tunnelled through a
// CONNECT proxy, with TLS on top for https. Private to the HTTP client.
//
// Every operation has a deadline: a steady_timer armed around it closes the socket when it
// fires, which fails the pending operation. Cancellation comes from the awaiting
// coroutine's slot, which Asio hands to each socket operation; a cancelled or timed-out
// connection is closed for good and the operation throws HttpError.

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/buffer.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/asio/steady_timer.hpp>

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "runner/http/http_client.h"
#include "runner/http/http_proxy.h"

namespace deskd::model {

class HttpConnection : public std::enable_shared_from_this<HttpConnection> {
 public:
  /// Connects to `url`'s host and port (through `proxy` when given), then shakes hands over
  /// TLS when the scheme is https (`tls_context` must then be set), all within
  /// `connect_timeout`. Throws HttpError{connect, tls, timeout, cancelled}.
  static boost::asio::awaitable<std::shared_ptr<HttpConnection>> open(boost::asio::any_io_executor executor,
                                                                      Url url, std::optional<ProxyServer> proxy,
                                                                      boost::asio::ssl::context* tls_context,
                                                                      std::chrono::milliseconds connect_timeout);

  /// Writes all of `bytes` within `timeout`. Throws HttpError{closed, timeout, cancelled}.
  boost::asio::awaitable<void> write(std::string_view bytes, std::chrono::milliseconds timeout);
  /// Reads what has arrived into `buffer`, waiting at most `timeout` for the first byte;
  /// 0 at the end of the stream. Throws HttpError{closed, timeout, cancelled}.
  boost::asio::awaitable<std::size_t> read_some(boost::asio::mutable_buffer buffer, std::chrono::milliseconds timeout);

  /// Closes the socket; pending operations fail and the connection cannot be used again.
  void close();
  bool is_open() const;
  /// "host:port" of the origin, for messages.
  const std::string& peer() const { return peer_; }
  /// Bytes read so far over the connection's life (to tell a stale keep-alive connection).
  std::uint64_t received_bytes() const { return received_bytes_; }

  /// Use open().
  HttpConnection(boost::asio::any_io_executor executor, std::string peer);
  ~HttpConnection();

 private:
  enum class Phase { connecting, sending, receiving };

  boost::asio::ip::tcp::socket& socket();
  void arm(std::chrono::steady_clock::time_point deadline);
  void disarm();
  // After each operation: throws HttpError{cancelled} or {timeout} if that is why it ended.
  void raise_if_interrupted(boost::asio::cancellation_type cancelled, Phase phase, std::string_view who,
                            std::chrono::milliseconds allowed);

  boost::asio::awaitable<void> connect_to(std::string host, std::uint16_t port, std::string who,
                                          bool loopback_only, std::chrono::steady_clock::time_point deadline,
                                          std::chrono::milliseconds allowed);
  boost::asio::awaitable<void> open_tunnel(Url url, ProxyServer proxy, std::chrono::steady_clock::time_point deadline,
                                           std::chrono::milliseconds allowed);
  boost::asio::awaitable<void> start_tls(std::string host, boost::asio::ssl::context& context,
                                         std::chrono::steady_clock::time_point deadline,
                                         std::chrono::milliseconds allowed);

  boost::asio::any_io_executor executor_;
  std::string peer_;
  std::optional<boost::asio::ip::tcp::socket> plain_;  // until TLS takes the socket over
  std::optional<boost::asio::ssl::stream<boost::asio::ip::tcp::socket>> tls_;
  boost::asio::steady_timer deadline_;
  std::uint64_t armed_generation_ = 0;  // tells a stale timer callback from the current one
  bool timed_out_ = false;
  std::uint64_t received_bytes_ = 0;
};

/// "N s" with up to three significant digits ("10 s", "0.3 s"), for timeout messages.
std::string seconds_text(std::chrono::milliseconds duration);

}  // namespace deskd::model
