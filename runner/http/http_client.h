#pragma once
// HttpClient: the model providers' HTTP/1.1 client, on Boost.Beast and OpenSSL. HTTPS
// verifies the certificate and the host name against the system store (or a configured
// CA file); plain HTTP is allowed only to loopback servers (local models, tests).
// HTTPS_PROXY / NO_PROXY are honoured through CONNECT. Connections are kept alive and
// reused per host. Every wait has a deadline: connecting (connect_timeout) and every read
// (idle_timeout: a stream that sends nothing for that long fails). A cancelled coroutine
// (a /stop: terminal cancellation on the awaiting coroutine's slot) closes the connection
// at once and throws HttpError{cancelled}.
//
// This header stays light: Beast and OpenSSL appear only in the .cpp.

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/result.h"

namespace deskd::model {

struct Url {
  std::string scheme;  ///< "http" or "https"
  std::string host;    ///< a name, an IPv4 address, or an IPv6 address without brackets
  std::uint16_t port = 0;
  std::string target;  ///< path and query, at least "/"
  /// Parses "https://api.anthropic.com/v1/messages", "http://127.0.0.1:8080/v1"...
  static Result<Url> parse(std::string_view text);
  /// "https://host:port/target" without credentials; for messages.
  std::string to_string() const;
};

/// Whether `host` is loopback (localhost, 127.0.0.0/8, ::1), where plain HTTP is allowed.
bool is_loopback_host(std::string_view host);

struct HttpSettings {
  std::optional<std::filesystem::path> ca_file;  ///< none: the system's certificate store
  std::chrono::milliseconds connect_timeout = std::chrono::seconds(10);
  std::chrono::milliseconds idle_timeout = std::chrono::seconds(120);
  /// A whole streamed model call, from the request to the reply's last event: a server that
  /// trickles bytes (comments, a line that never ends) resets idle_timeout forever.
  std::chrono::milliseconds call_timeout = std::chrono::minutes(5);
  /// Read HTTPS_PROXY/https_proxy and NO_PROXY/no_proxy from deskd's environment.
  bool proxy_from_environment = true;
};

struct HttpHeader {
  std::string name;
  std::string value;
};

struct HttpRequest {
  std::string method = "POST";
  Url url;
  std::vector<HttpHeader> headers;  ///< Host, Content-Length and Connection are added
  std::string body;
};

/// Why a request failed, for the retry policy and the user's message.
class HttpError : public std::runtime_error {
 public:
  enum class Kind { connect, tls, timeout, cancelled, protocol, closed };
  HttpError(Kind kind, const std::string& what) : std::runtime_error(what), kind_(kind) {}
  Kind kind() const { return kind_; }

 private:
  Kind kind_;
};

/// A response whose body is read piece by piece (a server-sent event stream) or whole.
class HttpResponse {
 public:
  virtual ~HttpResponse() = default;
  virtual unsigned status() const = 0;
  /// The first header of that name (case-insensitive).
  virtual std::optional<std::string> header(std::string_view name) const = 0;
  /// The next piece of the body (chunked or not, already de-chunked); nullopt at its end.
  /// Throws HttpError (timeout, cancelled, closed, protocol).
  virtual boost::asio::awaitable<std::optional<std::string>> read_some() = 0;
  /// The whole body, at most `maximum_bytes` (HttpError{protocol} past it).
  virtual boost::asio::awaitable<std::string> read_all(std::size_t maximum_bytes = std::size_t{16} << 20) = 0;
};

class HttpClient {
 public:
  HttpClient(boost::asio::any_io_executor executor, HttpSettings settings);
  ~HttpClient();
  HttpClient(const HttpClient&) = delete;
  HttpClient& operator=(const HttpClient&) = delete;

  /// Sends `request` and returns once the response's status and headers have arrived.
  /// Refuses plain HTTP to a host that is not loopback (HttpError{connect}). The response
  /// must be read to its end (or destroyed) before the next request to the same host
  /// reuses the connection; a response destroyed early closes its connection.
  boost::asio::awaitable<std::unique_ptr<HttpResponse>> send(HttpRequest request);

  /// The settings it was made with.
  const HttpSettings& settings() const;

 private:
  struct State;
  std::shared_ptr<State> state_;
};

}  // namespace deskd::model
