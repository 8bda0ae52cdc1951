#include "runner/http/http_client.h"

#include <openssl/ssl.h>

#include <boost/asio/ssl/context.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/beast/core/buffers_range.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/parser.hpp>

#include <algorithm>
#include <cctype>
#include <map>

#include "runner/http/http_connection.h"
#include "runner/http/http_proxy.h"

namespace deskd::model {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = boost::beast::http;
using Clock = std::chrono::steady_clock;

namespace {

constexpr std::size_t kReadBytes = 16 * 1024;
constexpr std::uint32_t kMaximumHeaderBytes = 64 * 1024;
constexpr std::size_t kMaximumIdlePerOrigin = 4;
// Servers drop idle connections after a minute or so; older ones are not worth a try.
constexpr auto kMaximumIdleAge = std::chrono::seconds(50);

// A body type that keeps only what the last put() delivered, so a long stream never
// accumulates and a Content-Length from the server never reserves memory up front.
struct PieceBody {
  using value_type = std::string;

  class reader {
   public:
    template <bool isRequest, class Fields>
    reader(http::header<isRequest, Fields>&, value_type& body) : body_(body) {}
    void init(const boost::optional<std::uint64_t>&, beast::error_code& error) { error = {}; }
    template <class ConstBufferSequence>
    std::size_t put(const ConstBufferSequence& buffers, beast::error_code& error) {
      std::size_t bytes = 0;
      for (auto buffer : beast::buffers_range_ref(buffers)) {
        body_.append(static_cast<const char*>(buffer.data()), buffer.size());
        bytes += buffer.size();
      }
      error = {};
      return bytes;
    }
    void finish(beast::error_code& error) { error = {}; }

   private:
    value_type& body_;
  };
};

using Parser = http::response_parser<PieceBody>;

std::unique_ptr<Parser> make_parser(bool head_request) {
  auto parser = std::make_unique<Parser>();
  parser->header_limit(kMaximumHeaderBytes);
  parser->body_limit(boost::none);  // streams are long; read_all() has its own limit
  if (head_request) parser->skip(true);
  return parser;
}

bool is_reserved_header(std::string_view name) {
  return beast::iequals(name, "host") || beast::iequals(name, "content-length") ||
         beast::iequals(name, "connection") || beast::iequals(name, "transfer-encoding");
}

bool is_token(std::string_view name) {
  return !name.empty() && std::all_of(name.begin(), name.end(), [](unsigned char character) {
    return std::isalnum(character) || std::string_view("!#$%&'*+-.^_`|~").find(static_cast<char>(character)) !=
                                          std::string_view::npos;
  });
}

bool is_clean_value(std::string_view value) {
  return std::none_of(value.begin(), value.end(), [](unsigned char character) {
    return character == '\r' || character == '\n' || character == '\0';
  });
}

// The request head. Header values (an API key among them) never go into a message.
std::string serialize_head(const HttpRequest& request) {
  if (!is_token(request.method)) {
    throw HttpError(HttpError::Kind::protocol, "The request method \"" + request.method + "\" is not a valid HTTP method.");
  }
  const Url& url = request.url;
  bool default_port = (url.scheme == "https" && url.port == 443) || (url.scheme == "http" && url.port == 80);
  std::string host = url.host.find(':') != std::string::npos ? "[" + url.host + "]" : url.host;
  if (!default_port) host += ":" + std::to_string(url.port);

  std::string head = request.method + " " + url.target + " HTTP/1.1\r\nHost: " + host + "\r\n";
  for (const auto& header : request.headers) {
    if (!is_token(header.name)) {
      throw HttpError(HttpError::Kind::protocol, "The request header name \"" + header.name + "\" is not valid.");
    }
    if (!is_clean_value(header.value)) {
      throw HttpError(HttpError::Kind::protocol,
                      "The value of the request header " + header.name + " has a line break; it was not sent.");
    }
    if (is_reserved_header(header.name)) continue;
    head += header.name + ": " + header.value + "\r\n";
  }
  bool carries_body = !request.body.empty() || request.method == "POST" || request.method == "PUT" ||
                      request.method == "PATCH";
  if (carries_body) head += "Content-Length: " + std::to_string(request.body.size()) + "\r\n";
  head += "Connection: keep-alive\r\n\r\n";
  return head;
}

std::string parse_failure(const HttpConnection& connection, const beast::error_code& error) {
  return connection.peer() + " sent a malformed HTTP response: " + error.message() + ".";
}

}  // namespace

// The client's shared state; HttpClient::State derives from it so that the response and
// the free coroutines below can name it.
struct HttpClientState {
  HttpClientState(asio::any_io_executor executor_, HttpSettings settings_)
      : executor(std::move(executor_)), settings(std::move(settings_)) {}

  asio::any_io_executor executor;
  HttpSettings settings;
  std::optional<asio::ssl::context> tls_context;
  struct Idle {
    std::shared_ptr<HttpConnection> connection;
    Clock::time_point since;
  };
  std::map<std::string, std::vector<Idle>> idle;  // by origin and route

  asio::ssl::context& tls() {
    if (tls_context) return *tls_context;
    asio::ssl::context context(asio::ssl::context::tls_client);
    SSL_CTX_set_min_proto_version(context.native_handle(), TLS1_2_VERSION);
    context.set_verify_mode(asio::ssl::verify_peer);
    boost::system::error_code error;
    if (settings.ca_file) {
      const std::string path = settings.ca_file->string();
      std::error_code exists_error;
      if (!std::filesystem::exists(*settings.ca_file, exists_error)) {
        throw HttpError(HttpError::Kind::tls, "The CA file " + path + " does not exist.");
      }
      context.load_verify_file(path, error);
      if (error) {
        throw HttpError(HttpError::Kind::tls,
                        "The CA file " + path + " could not be loaded (it must hold PEM certificates): " +
                            error.message() + ".");
      }
    } else {
      context.set_default_verify_paths(error);
      if (error) {
        throw HttpError(HttpError::Kind::tls, "The system's certificate store could not be loaded: " + error.message() + ".");
      }
    }
    tls_context.emplace(std::move(context));
    return *tls_context;
  }

  std::shared_ptr<HttpConnection> take_idle(const std::string& key) {
    auto found = idle.find(key);
    if (found == idle.end()) return nullptr;
    auto& connections = found->second;
    std::shared_ptr<HttpConnection> connection;
    while (!connections.empty() && !connection) {
      Idle newest = std::move(connections.back());
      connections.pop_back();
      if (newest.connection->is_open() && Clock::now() - newest.since < kMaximumIdleAge) {
        connection = std::move(newest.connection);
      }
    }
    if (connections.empty()) idle.erase(found);
    return connection;
  }

  void give_back(const std::string& key, std::shared_ptr<HttpConnection> connection) {
    auto& connections = idle[key];
    if (connections.size() >= kMaximumIdlePerOrigin) connections.erase(connections.begin());
    connections.push_back(Idle{std::move(connection), Clock::now()});
  }
};

struct HttpClient::State : HttpClientState {
  using HttpClientState::HttpClientState;
};

const HttpSettings& HttpClient::settings() const { return state_->settings; }

namespace {

class StreamingResponse final : public HttpResponse {
 public:
  StreamingResponse(std::shared_ptr<HttpConnection> connection, std::weak_ptr<HttpClientState> client,
                    std::string pool_key, std::unique_ptr<Parser> parser, beast::flat_buffer buffer,
                    std::chrono::milliseconds idle_timeout)
      : connection_(std::move(connection)),
        client_(std::move(client)),
        pool_key_(std::move(pool_key)),
        parser_(std::move(parser)),
        buffer_(std::move(buffer)),
        idle_timeout_(idle_timeout) {
    const auto& message = parser_->get();
    status_ = message.result_int();
    for (const auto& field : message) {
      headers_.push_back(HttpHeader{std::string(field.name_string()), std::string(field.value())});
    }
    parser_->eager(true);
    if (parser_->is_done()) finish();
  }

  ~StreamingResponse() override {
    // Unread body bytes would be taken for the next response: the connection must go.
    if (connection_) connection_->close();
  }

  unsigned status() const override { return status_; }

  std::optional<std::string> header(std::string_view name) const override {
    for (const auto& header : headers_) {
      if (beast::iequals(header.name, name)) return header.value;
    }
    return std::nullopt;
  }

  asio::awaitable<std::optional<std::string>> read_some() override {
    try {
      auto piece = co_await next_piece();
      co_return piece;
    } catch (const boost::system::system_error& error) {
      abandon();
      if (error.code() != asio::error::operation_aborted) throw;
      throw HttpError(HttpError::Kind::cancelled, "The request was cancelled.");
    } catch (...) {
      abandon();
      throw;
    }
  }

  asio::awaitable<std::string> read_all(std::size_t maximum_bytes) override {
    std::string body;
    for (;;) {
      auto piece = co_await read_some();
      if (!piece) break;
      if (body.size() + piece->size() > maximum_bytes) {
        abandon();
        throw HttpError(HttpError::Kind::protocol,
                        "The response body is larger than " + std::to_string(maximum_bytes) + " bytes.");
      }
      body += *piece;
    }
    co_return body;
  }

 private:
  void abandon() {
    if (connection_) connection_->close();
    connection_.reset();
    finished_ = true;
    failed_ = true;
  }

  // The response is complete: the connection may serve the next request to this origin
  // if the server keeps it open and nothing unread is left on it.
  void finish() {
    finished_ = true;
    auto client = client_.lock();
    bool reusable = client && connection_ && !end_of_stream_ && parser_->keep_alive() && !parser_->need_eof() &&
                    buffer_.size() == 0 && connection_->is_open();
    if (reusable) client->give_back(pool_key_, std::move(connection_));
    if (connection_) connection_->close();
    connection_.reset();
  }

  asio::awaitable<std::optional<std::string>> next_piece() {
    if (failed_) {
      throw HttpError(HttpError::Kind::closed, "The response can no longer be read: an earlier read failed.");
    }
    for (;;) {
      if (finished_) co_return std::nullopt;
      bool need_bytes = buffer_.size() == 0;
      if (!need_bytes) {
        beast::error_code error;
        std::size_t used = parser_->put(buffer_.data(), error);
        buffer_.consume(used);
        if (error && error != http::error::need_more) {
          throw HttpError(HttpError::Kind::protocol, parse_failure(*connection_, error));
        }
        std::string piece = std::move(parser_->get().body());
        parser_->get().body().clear();
        if (parser_->is_done()) finish();
        if (!piece.empty()) co_return piece;
        need_bytes = error == http::error::need_more || used == 0;
      }
      if (!need_bytes || finished_) continue;

      std::size_t bytes = co_await connection_->read_some(buffer_.prepare(kReadBytes), idle_timeout_);
      buffer_.commit(bytes);
      if (bytes == 0) {
        end_of_stream_ = true;
        beast::error_code error;
        parser_->put_eof(error);
        if (error) {
          throw HttpError(HttpError::Kind::closed,
                          connection_->peer() + " closed the connection in the middle of the response body.");
        }
        finish();  // a body that runs until the server closes
      }
    }
  }

  std::shared_ptr<HttpConnection> connection_;
  std::weak_ptr<HttpClientState> client_;
  std::string pool_key_;
  std::unique_ptr<Parser> parser_;
  beast::flat_buffer buffer_;
  std::chrono::milliseconds idle_timeout_;
  unsigned status_ = 0;
  std::vector<HttpHeader> headers_;
  bool finished_ = false;
  bool failed_ = false;
  bool end_of_stream_ = false;
};

// Sends the request on `connection` and reads up to the end of the final (non-1xx) head.
asio::awaitable<std::unique_ptr<HttpResponse>> exchange(std::shared_ptr<HttpConnection> connection,
                                                        std::shared_ptr<HttpClientState> state, std::string pool_key,
                                                        std::string bytes, bool head_request) {
  const auto idle_timeout = state->settings.idle_timeout;
  co_await connection->write(bytes, idle_timeout);

  beast::flat_buffer buffer;
  auto parser = make_parser(head_request);
  for (;;) {
    if (buffer.size() > 0) {
      beast::error_code error;
      std::size_t used = parser->put(buffer.data(), error);
      buffer.consume(used);
      if (error && error != http::error::need_more) {
        connection->close();
        throw HttpError(HttpError::Kind::protocol, parse_failure(*connection, error));
      }
      if (parser->is_header_done()) {
        unsigned status = parser->get().result_int();
        if (status == 101) {
          connection->close();
          throw HttpError(HttpError::Kind::protocol, connection->peer() + " switched protocols unasked.");
        }
        if (status >= 200) break;
        parser = make_parser(head_request);  // 1xx: an interim answer; the real one follows
        continue;
      }
      if (!error && used > 0) continue;
    }
    std::size_t received = co_await connection->read_some(buffer.prepare(kReadBytes), idle_timeout);
    buffer.commit(received);
    if (received == 0) {
      connection->close();
      throw HttpError(HttpError::Kind::closed, connection->peer() + " closed the connection without answering.");
    }
  }
  std::unique_ptr<HttpResponse> response = std::make_unique<StreamingResponse>(
      std::move(connection), state, std::move(pool_key), std::move(parser), std::move(buffer), idle_timeout);
  co_return response;
}

asio::awaitable<std::unique_ptr<HttpResponse>> send_with_retry(std::shared_ptr<HttpClientState> state,
                                                               HttpRequest request) {
  const Url& url = request.url;
  if (url.scheme != "https" && url.scheme != "http") {
    throw HttpError(HttpError::Kind::connect, "Only http:// and https:// URLs are supported.");
  }
  if (url.scheme == "http" && !is_loopback_host(url.host)) {
    throw HttpError(HttpError::Kind::connect,
                    "Plain HTTP is allowed only to loopback servers; use https:// for " + url.host + ".");
  }
  std::string bytes = serialize_head(request);
  bytes += request.body;

  std::optional<ProxyServer> proxy;
  if (state->settings.proxy_from_environment) {
    auto chosen = proxy_from_environment(url);
    if (!chosen.ok()) throw HttpError(HttpError::Kind::connect, chosen.error().what);
    proxy = std::move(chosen).value();
  }
  asio::ssl::context* tls_context = url.scheme == "https" ? &state->tls() : nullptr;
  std::string pool_key = url.scheme + "://" + url.host + ":" + std::to_string(url.port);
  // The credentials are part of the route, never shown; a different login is a different pool.
  if (proxy) pool_key += " via " + proxy->description() + " " + proxy->authorization;
  bool head_request = request.method == "HEAD";

  for (int attempt = 0;; ++attempt) {
    std::shared_ptr<HttpConnection> connection;
    if (attempt == 0) connection = state->take_idle(pool_key);
    bool reused = connection != nullptr;
    if (!connection) {
      connection = co_await HttpConnection::open(state->executor, url, proxy, tls_context,
                                                 state->settings.connect_timeout);
    }
    std::uint64_t received_before = connection->received_bytes();
    bool stale = false;
    std::unique_ptr<HttpResponse> response;
    try {
      response = co_await exchange(connection, state, pool_key, bytes, head_request);
    } catch (const HttpError& error) {
      // A kept-alive connection the server has meanwhile closed fails before any byte
      // of an answer: the request never reached it, so one fresh try is safe.
      stale = reused && error.kind() == HttpError::Kind::closed && connection->received_bytes() == received_before;
      if (!stale) throw;
    }
    if (!stale) co_return response;
    connection->close();
  }
}

}  // namespace

HttpClient::HttpClient(asio::any_io_executor executor, HttpSettings settings)
    : state_(std::make_shared<State>(std::move(executor), std::move(settings))) {}

HttpClient::~HttpClient() {
  for (auto& [key, connections] : state_->idle) {
    for (auto& idle : connections) idle.connection->close();
  }
  state_->idle.clear();
}

asio::awaitable<std::unique_ptr<HttpResponse>> HttpClient::send(HttpRequest request) {
  auto state = state_;
  try {
    auto response = co_await send_with_retry(state, std::move(request));
    co_return response;
  } catch (const boost::system::system_error& error) {
    // Asio throws operation_aborted when a cancelled coroutine tries to suspend again.
    if (error.code() != asio::error::operation_aborted) throw;
    throw HttpError(HttpError::Kind::cancelled, "The request was cancelled.");
  }
}

}  // namespace deskd::model
