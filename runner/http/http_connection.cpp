#include "runner/http/http_connection.h"

#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/connect.hpp>
#include <boost/asio/ip/address.hpp>
#include <boost/asio/ssl/error.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>

#include <algorithm>
#include <array>
#include <charconv>
#include <cstdio>
#include <utility>
#include <vector>

#include "base/asio_await.h"

namespace deskd::model {

namespace asio = boost::asio;
using asio::ip::tcp;
using Clock = std::chrono::steady_clock;

namespace {

constexpr std::size_t kMaximumProxyAnswerBytes = 16 * 1024;
const std::string kCancelled = "The request was cancelled.";

std::string authority_of(const std::string& host, std::uint16_t port) {
  bool ipv6 = host.find(':') != std::string::npos;
  return (ipv6 ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

// A proxy's status line goes into a message: keep it short and printable.
std::string printable_line(std::string_view text) {
  text = text.substr(0, std::min(text.find("\r\n"), std::size_t{200}));
  std::string line;
  for (char character : text) line.push_back(character >= 0x20 && character < 0x7f ? character : '?');
  return line;
}

// The resolver's answer, shared with its completion handler, which may run after the
// coroutine that asked has given up.
struct Lookup {
  explicit Lookup(const asio::any_io_executor& executor) : wake(executor) {}
  asio::steady_timer wake;
  bool done = false;
  boost::system::error_code error;
  tcp::resolver::results_type results;
};

// getaddrinfo runs on Asio's resolver thread and cannot be interrupted, so the coroutine
// waits on a timer instead: the lookup cancels it when done, the deadline fires it, and
// the coroutine's cancellation slot (handed to the timer wait) ends it at once.
asio::awaitable<std::vector<tcp::endpoint>> resolve(asio::any_io_executor executor, std::string host,
                                                    std::uint16_t port, Clock::time_point deadline, std::string who,
                                                    std::chrono::milliseconds allowed) {
  std::vector<tcp::endpoint> endpoints;
  boost::system::error_code literal_error;
  auto address = asio::ip::make_address(host, literal_error);
  if (!literal_error) {
    endpoints.emplace_back(address, port);
    co_return endpoints;
  }
  tcp::resolver resolver(executor);
  auto lookup = std::make_shared<Lookup>(executor);
  lookup->wake.expires_at(deadline);
  resolver.async_resolve(host, std::to_string(port), tcp::resolver::numeric_service,
                         [lookup](const boost::system::error_code& error, tcp::resolver::results_type results) {
                           lookup->done = true;
                           lookup->error = error;
                           lookup->results = std::move(results);
                           lookup->wake.cancel();
                         });
  co_await lookup->wake.async_wait(kAwait);
  auto state = co_await asio::this_coro::cancellation_state;
  if (state.cancelled() != asio::cancellation_type::none) {
    resolver.cancel();
    throw HttpError(HttpError::Kind::cancelled, kCancelled);
  }
  if (!lookup->done) {
    resolver.cancel();
    throw HttpError(HttpError::Kind::timeout, who + " did not connect within " + seconds_text(allowed) +
                                                  " (the name lookup did not finish).");
  }
  if (lookup->error) {
    throw HttpError(HttpError::Kind::connect, "Could not resolve " + host + ": " + lookup->error.message() + ".");
  }
  for (const auto& entry : lookup->results) endpoints.push_back(entry.endpoint());
  co_return endpoints;
}

bool is_loopback_endpoint(const tcp::endpoint& endpoint) {
  auto address = endpoint.address();
  if (address.is_v6() && address.to_v6().is_v4_mapped()) {
    return asio::ip::make_address_v4(asio::ip::v4_mapped, address.to_v6()).is_loopback();
  }
  return address.is_loopback();
}

}  // namespace

std::string seconds_text(std::chrono::milliseconds duration) {
  if (duration.count() % 1000 == 0) return std::to_string(duration.count() / 1000) + " s";
  std::array<char, 32> text{};
  std::snprintf(text.data(), text.size(), "%.3g s", static_cast<double>(duration.count()) / 1000.0);
  return text.data();
}

HttpConnection::HttpConnection(asio::any_io_executor executor, std::string peer)
    : executor_(executor), peer_(std::move(peer)), plain_(std::in_place, executor), deadline_(executor) {}

HttpConnection::~HttpConnection() { close(); }

tcp::socket& HttpConnection::socket() { return tls_ ? tls_->next_layer() : *plain_; }

bool HttpConnection::is_open() const { return tls_ ? tls_->next_layer().is_open() : plain_ && plain_->is_open(); }

void HttpConnection::close() {
  boost::system::error_code ignored;
  // No TLS close_notify: the connection is abandoned, and waiting for the peer is what
  // a cancel or a timeout must not do.
  if (tls_ || plain_) socket().close(ignored);
  ++armed_generation_;
  deadline_.cancel();
}

void HttpConnection::arm(Clock::time_point deadline) {
  ++armed_generation_;
  timed_out_ = false;
  deadline_.expires_at(deadline);
  deadline_.async_wait([weak = weak_from_this(), generation = armed_generation_](const boost::system::error_code& error) {
    auto self = weak.lock();
    // A timer that already fired may still run after disarm(): the generation tells.
    if (error || !self || self->armed_generation_ != generation) return;
    self->timed_out_ = true;
    boost::system::error_code ignored;
    self->socket().close(ignored);
  });
}

void HttpConnection::disarm() {
  ++armed_generation_;
  deadline_.cancel();
}

void HttpConnection::raise_if_interrupted(asio::cancellation_type cancelled, Phase phase, std::string_view who,
                                          std::chrono::milliseconds allowed) {
  if (cancelled != asio::cancellation_type::none) {
    close();
    throw HttpError(HttpError::Kind::cancelled, kCancelled);
  }
  if (!timed_out_) return;
  close();
  std::string subject(who);
  switch (phase) {
    case Phase::connecting:
      throw HttpError(HttpError::Kind::timeout, subject + " did not connect within " + seconds_text(allowed) + ".");
    case Phase::sending:
      throw HttpError(HttpError::Kind::timeout,
                      subject + " did not take the request within " + seconds_text(allowed) + ".");
    case Phase::receiving:
      throw HttpError(HttpError::Kind::timeout, subject + " sent nothing for " + seconds_text(allowed) + ".");
  }
}

asio::awaitable<std::shared_ptr<HttpConnection>> HttpConnection::open(asio::any_io_executor executor, Url url,
                                                                      std::optional<ProxyServer> proxy,
                                                                      asio::ssl::context* tls_context,
                                                                      std::chrono::milliseconds connect_timeout) {
  auto deadline = Clock::now() + connect_timeout;
  auto connection = std::make_shared<HttpConnection>(executor, authority_of(url.host, url.port));
  if (proxy) {
    std::string who = "HTTPS proxy " + proxy->description();
    co_await connection->connect_to(proxy->host, proxy->port, who, false, deadline, connect_timeout);
    co_await connection->open_tunnel(url, *proxy, deadline, connect_timeout);
  } else {
    // Plain HTTP is for loopback only; a name like "localhost" must also resolve there.
    bool loopback_only = url.scheme == "http";
    co_await connection->connect_to(url.host, url.port, connection->peer(), loopback_only, deadline, connect_timeout);
  }
  if (url.scheme == "https") co_await connection->start_tls(url.host, *tls_context, deadline, connect_timeout);
  co_return connection;
}

asio::awaitable<void> HttpConnection::connect_to(std::string host, std::uint16_t port, std::string who,
                                                 bool loopback_only, Clock::time_point deadline,
                                                 std::chrono::milliseconds allowed) {
  auto endpoints = co_await resolve(executor_, host, port, deadline, who, allowed);
  if (loopback_only) {
    std::erase_if(endpoints, [](const tcp::endpoint& endpoint) { return !is_loopback_endpoint(endpoint); });
    if (endpoints.empty()) {
      throw HttpError(HttpError::Kind::connect, "Plain HTTP is allowed only to loopback servers, and " + host +
                                                    " did not resolve to a loopback address; use https://.");
    }
  }
  boost::system::error_code last_error = asio::error::host_not_found;
  for (const auto& endpoint : endpoints) {
    boost::system::error_code ignored;
    socket().close(ignored);
    arm(deadline);
    auto [error] = co_await socket().async_connect(endpoint, kAwait);
    disarm();
    auto state = co_await asio::this_coro::cancellation_state;
    raise_if_interrupted(state.cancelled(), Phase::connecting, who, allowed);
    if (!error) {
      socket().set_option(tcp::no_delay(true), ignored);
      co_return;
    }
    last_error = error;
  }
  close();
  throw HttpError(HttpError::Kind::connect, "Could not connect to " + who + ": " + last_error.message() + ".");
}

asio::awaitable<void> HttpConnection::open_tunnel(Url url, ProxyServer proxy, Clock::time_point deadline,
                                                  std::chrono::milliseconds allowed) {
  std::string who = "HTTPS proxy " + proxy.description();
  std::string authority = authority_of(url.host, url.port);
  std::string request = "CONNECT " + authority + " HTTP/1.1\r\nHost: " + authority + "\r\n";
  if (!proxy.authorization.empty()) request += "Proxy-Authorization: " + proxy.authorization + "\r\n";
  request += "\r\n";

  arm(deadline);
  auto [write_error, written] = co_await asio::async_write(*plain_, asio::buffer(request), kAwait);
  disarm();
  auto state = co_await asio::this_coro::cancellation_state;
  raise_if_interrupted(state.cancelled(), Phase::connecting, who, allowed);
  if (write_error) {
    close();
    throw HttpError(HttpError::Kind::connect,
                    "Could not ask " + who + " for a tunnel to " + authority + ": " + write_error.message() + ".");
  }

  std::string answer;
  std::string piece(1024, '\0');
  while (answer.find("\r\n\r\n") == std::string::npos) {
    if (answer.size() > kMaximumProxyAnswerBytes) {
      close();
      throw HttpError(HttpError::Kind::connect, who + " sent an oversized answer to CONNECT.");
    }
    arm(deadline);
    auto [read_error, bytes] = co_await plain_->async_read_some(asio::buffer(piece.data(), piece.size()), kAwait);
    disarm();
    auto read_state = co_await asio::this_coro::cancellation_state;
    raise_if_interrupted(read_state.cancelled(), Phase::connecting, who, allowed);
    if (read_error) {
      close();
      throw HttpError(HttpError::Kind::connect, who + " closed the connection instead of opening a tunnel to " +
                                                    authority + ": " + read_error.message() + ".");
    }
    answer.append(piece.data(), bytes);
  }

  unsigned status = 0;
  bool parsed = answer.starts_with("HTTP/1.") && answer.size() > 12 && answer[8] == ' ' &&
                std::from_chars(answer.data() + 9, answer.data() + 12, status).ptr == answer.data() + 12;
  if (!parsed || status < 200 || status > 299) {
    close();
    throw HttpError(HttpError::Kind::connect, who + " refused to open a tunnel to " + authority + ": \"" +
                                                  printable_line(answer) + "\".");
  }
  // The proxy must stay silent until our TLS ClientHello; bytes here would be lost.
  if (answer.find("\r\n\r\n") + 4 != answer.size()) {
    close();
    throw HttpError(HttpError::Kind::connect, who + " sent data through the tunnel before it was used.");
  }
}

asio::awaitable<void> HttpConnection::start_tls(std::string host, asio::ssl::context& context,
                                                Clock::time_point deadline, std::chrono::milliseconds allowed) {
  tls_.emplace(std::move(*plain_), context);
  plain_.reset();
  SSL* handle = tls_->native_handle();
  X509_VERIFY_PARAM* parameters = SSL_get0_param(handle);
  boost::system::error_code literal_error;
  asio::ip::make_address(host, literal_error);
  bool configured = false;
  if (literal_error) {
    // SNI picks the certificate on shared front ends; RFC 6066 forbids it for addresses.
    configured = SSL_set_tlsext_host_name(handle, host.c_str()) == 1;
    X509_VERIFY_PARAM_set_hostflags(parameters, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
    configured = configured && X509_VERIFY_PARAM_set1_host(parameters, host.c_str(), host.size()) == 1;
  } else {
    configured = X509_VERIFY_PARAM_set1_ip_asc(parameters, host.c_str()) == 1;
  }
  if (!configured) {
    close();
    throw HttpError(HttpError::Kind::tls, "Could not set up certificate checks for " + host + ".");
  }

  arm(deadline);
  auto [error] = co_await tls_->async_handshake(asio::ssl::stream_base::client, kAwait);
  disarm();
  auto state = co_await asio::this_coro::cancellation_state;
  raise_if_interrupted(state.cancelled(), Phase::connecting, peer_, allowed);
  if (error) {
    long verify_result = SSL_get_verify_result(handle);
    close();
    if (verify_result != X509_V_OK) {
      throw HttpError(HttpError::Kind::tls, "The certificate of " + peer_ + " was not trusted: " +
                                                X509_verify_cert_error_string(verify_result) + ".");
    }
    throw HttpError(HttpError::Kind::tls, "The TLS handshake with " + peer_ + " failed: " + error.message() + ".");
  }
}

asio::awaitable<void> HttpConnection::write(std::string_view bytes, std::chrono::milliseconds timeout) {
  if (!is_open()) throw HttpError(HttpError::Kind::closed, "The connection to " + peer_ + " is closed.");
  boost::system::error_code error;
  arm(Clock::now() + timeout);
  if (tls_) {
    auto [tls_error, written] = co_await asio::async_write(*tls_, asio::buffer(bytes.data(), bytes.size()), kAwait);
    error = tls_error;
  } else {
    auto [plain_error, written] = co_await asio::async_write(*plain_, asio::buffer(bytes.data(), bytes.size()), kAwait);
    error = plain_error;
  }
  disarm();
  auto state = co_await asio::this_coro::cancellation_state;
  raise_if_interrupted(state.cancelled(), Phase::sending, peer_, timeout);
  if (error) {
    close();
    throw HttpError(HttpError::Kind::closed,
                    "The connection to " + peer_ + " failed while sending the request: " + error.message() + ".");
  }
}

asio::awaitable<std::size_t> HttpConnection::read_some(asio::mutable_buffer buffer, std::chrono::milliseconds timeout) {
  if (!is_open()) throw HttpError(HttpError::Kind::closed, "The connection to " + peer_ + " is closed.");
  boost::system::error_code error;
  std::size_t bytes = 0;
  arm(Clock::now() + timeout);
  if (tls_) {
    auto [tls_error, tls_bytes] = co_await tls_->async_read_some(buffer, kAwait);
    error = tls_error;
    bytes = tls_bytes;
  } else {
    auto [plain_error, plain_bytes] = co_await plain_->async_read_some(buffer, kAwait);
    error = plain_error;
    bytes = plain_bytes;
  }
  disarm();
  auto state = co_await asio::this_coro::cancellation_state;
  raise_if_interrupted(state.cancelled(), Phase::receiving, peer_, timeout);
  received_bytes_ += bytes;
  // Many servers close a TLS connection without close_notify; the HTTP framing (length
  // or last chunk) is what tells a whole body from a cut one.
  if (error == asio::error::eof || error == asio::ssl::error::stream_truncated) co_return bytes;
  if (error) {
    close();
    throw HttpError(HttpError::Kind::closed, "The connection to " + peer_ + " failed: " + error.message() + ".");
  }
  co_return bytes;
}

}  // namespace deskd::model
