// The HTTP client against the fake server and proxy on loopback: real sockets, real TLS
// with a certificate made for the test, the client's io_context run by the test thread.
#include "runner/model/http_client.h"

#include <stdlib.h>
#include <sys/socket.h>

#include <gtest/gtest.h>

#include <boost/asio.hpp>

#include <map>
#include <thread>

#include "base/unique_fd.h"
#include "runner/model/http_proxy.h"
#include "unit/model/fake_http_server.h"

namespace deskd::model {
namespace {

namespace asio = boost::asio;
using namespace std::chrono_literals;
using testing::BodyPiece;
using testing::FakeConnectProxy;
using testing::FakeHttpServer;
using testing::FakeResponse;
using testing::FakeServerOptions;
using Clock = std::chrono::steady_clock;

// ---- Url, loopback, proxy selection ----------------------------------------------------------

TEST(UrlTest, ParsesSchemeHostPortAndTarget) {
  auto anthropic = Url::parse("https://api.anthropic.com/v1/messages");
  ASSERT_TRUE(anthropic.ok()) << anthropic.error().what;
  EXPECT_EQ(anthropic->scheme, "https");
  EXPECT_EQ(anthropic->host, "api.anthropic.com");
  EXPECT_EQ(anthropic->port, 443);
  EXPECT_EQ(anthropic->target, "/v1/messages");
  EXPECT_EQ(anthropic->to_string(), "https://api.anthropic.com:443/v1/messages");

  auto local = Url::parse("http://127.0.0.1:8080/v1");
  ASSERT_TRUE(local.ok());
  EXPECT_EQ(local->port, 8080);
  EXPECT_EQ(local->target, "/v1");

  auto ipv6 = Url::parse("http://[::1]:9000/x?y=1#fragment");
  ASSERT_TRUE(ipv6.ok()) << ipv6.error().what;
  EXPECT_EQ(ipv6->host, "::1");
  EXPECT_EQ(ipv6->port, 9000);
  EXPECT_EQ(ipv6->target, "/x?y=1");
  EXPECT_EQ(ipv6->to_string(), "http://[::1]:9000/x?y=1");

  auto bare = Url::parse("HTTPS://Example.COM");
  ASSERT_TRUE(bare.ok());
  EXPECT_EQ(bare->scheme, "https");
  EXPECT_EQ(bare->host, "example.com");
  EXPECT_EQ(bare->target, "/");
  auto http_default = Url::parse("http://localhost?q=1");
  ASSERT_TRUE(http_default.ok());
  EXPECT_EQ(http_default->port, 80);
  EXPECT_EQ(http_default->target, "/?q=1");
}

TEST(UrlTest, RefusesWhatItCannotUseSafely) {
  for (const char* text : {"ftp://example.com/", "api.anthropic.com/v1", "https:///v1", "https://:443/",
                           "https://host:0/", "https://host:65536/", "https://host:abc/", "https://host:/",
                           "https://ho st/", "https://[::1/", "https://[nonsense]/", "https://host/a b",
                           "https://host/a\r\nX: y"}) {
    EXPECT_FALSE(Url::parse(text).ok()) << text;
  }
  auto credentials = Url::parse("https://me:secret@api.example.com/v1");
  ASSERT_FALSE(credentials.ok());
  EXPECT_NE(credentials.error().what.find("user name or password"), std::string::npos);
  EXPECT_EQ(credentials.error().what.find("secret"), std::string::npos);
}

TEST(LoopbackTest, KnowsLoopbackHosts) {
  for (const char* host : {"localhost", "LocalHost", "127.0.0.1", "127.5.6.7", "::1", "[::1]", "::ffff:127.0.0.1"}) {
    EXPECT_TRUE(is_loopback_host(host)) << host;
  }
  for (const char* host : {"", "example.com", "10.0.0.1", "128.0.0.1", "::2", "localhost.evil.com", "127.1",
                           "0.0.0.0"}) {
    EXPECT_FALSE(is_loopback_host(host)) << host;
  }
}

TEST(ProxyTest, ParsesProxyUrls) {
  auto plain = parse_proxy_url("http://proxy.corp:3128/");
  ASSERT_TRUE(plain.ok()) << plain.error().what;
  EXPECT_EQ(plain->host, "proxy.corp");
  EXPECT_EQ(plain->port, 3128);
  EXPECT_EQ(plain->authorization, "");
  EXPECT_EQ(plain->description(), "proxy.corp:3128");

  auto bare = parse_proxy_url("proxy:8080");
  ASSERT_TRUE(bare.ok());
  EXPECT_EQ(bare->port, 8080);

  auto with_login = parse_proxy_url("http://u:p@proxy:3128");
  ASSERT_TRUE(with_login.ok());
  EXPECT_EQ(with_login->authorization, "Basic dTpw");  // base64("u:p")
  EXPECT_EQ(with_login->description(), "proxy:3128");

  auto encoded = parse_proxy_url("http://me%40corp:pa%3Ass@proxy:3128");
  ASSERT_TRUE(encoded.ok());
  EXPECT_EQ(encoded->authorization, "Basic bWVAY29ycDpwYTpzcw==");  // base64("me@corp:pa:ss")

  auto https_proxy = parse_proxy_url("https://u:secret@proxy:443");
  ASSERT_FALSE(https_proxy.ok());
  EXPECT_EQ(https_proxy.error().what.find("secret"), std::string::npos);
  auto broken = parse_proxy_url("http://u:secret@pro xy:1");
  ASSERT_FALSE(broken.ok());
  EXPECT_EQ(broken.error().what.find("secret"), std::string::npos);
}

TEST(ProxyTest, NoProxyMatchesHostsAndDomainSuffixes) {
  EXPECT_TRUE(no_proxy_excludes("*", "api.anthropic.com"));
  EXPECT_TRUE(no_proxy_excludes("example.com", "example.com"));
  EXPECT_TRUE(no_proxy_excludes("example.com", "api.example.com"));
  EXPECT_FALSE(no_proxy_excludes("example.com", "badexample.com"));
  EXPECT_TRUE(no_proxy_excludes(".example.com", "example.com"));
  EXPECT_TRUE(no_proxy_excludes(" other.org , .example.com", "api.example.com"));
  EXPECT_TRUE(no_proxy_excludes("*.example.com", "api.example.com"));
  EXPECT_TRUE(no_proxy_excludes("EXAMPLE.com:8443", "example.com"));
  EXPECT_TRUE(no_proxy_excludes("10.0.0.1", "10.0.0.1"));
  EXPECT_FALSE(no_proxy_excludes("10.0.0.1", "10.0.0.12"));
  EXPECT_TRUE(no_proxy_excludes("[::1]", "::1"));
  EXPECT_FALSE(no_proxy_excludes("", "example.com"));
  EXPECT_FALSE(no_proxy_excludes(",,", "example.com"));
}

// Sets environment variables for one test and puts the old values back.
class ScopedEnvironment {
 public:
  ~ScopedEnvironment() {
    for (const auto& [name, value] : saved_) {
      if (value) {
        setenv(name.c_str(), value->c_str(), 1);
      } else {
        unsetenv(name.c_str());
      }
    }
  }
  void set(const std::string& name, const std::string& value) {
    save(name);
    setenv(name.c_str(), value.c_str(), 1);
  }
  void unset(const std::string& name) {
    save(name);
    unsetenv(name.c_str());
  }

 private:
  void save(const std::string& name) {
    if (saved_.count(name)) return;
    const char* value = std::getenv(name.c_str());
    saved_[name] = value ? std::optional<std::string>(value) : std::nullopt;
  }
  std::map<std::string, std::optional<std::string>> saved_;
};

TEST(ProxyTest, ChoosesTheProxyFromTheEnvironment) {
  ScopedEnvironment environment;
  for (const char* name : {"HTTPS_PROXY", "https_proxy", "NO_PROXY", "no_proxy"}) environment.unset(name);
  auto url = Url::parse("https://api.anthropic.com/v1/messages").value();
  auto none = proxy_from_environment(url);
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->has_value());

  environment.set("https_proxy", "http://proxy:3128");
  auto chosen = proxy_from_environment(url);
  ASSERT_TRUE(chosen.ok());
  ASSERT_TRUE(chosen->has_value());
  EXPECT_EQ((*chosen)->description(), "proxy:3128");

  EXPECT_FALSE(proxy_from_environment(Url::parse("https://localhost:8443/").value())->has_value());
  EXPECT_FALSE(proxy_from_environment(Url::parse("http://127.0.0.1:8080/").value())->has_value());
  environment.set("no_proxy", "anthropic.com");
  EXPECT_FALSE(proxy_from_environment(url)->has_value());
  environment.set("NO_PROXY", "other.org");  // the upper-case name wins
  EXPECT_TRUE(proxy_from_environment(url)->has_value());
}

// ---- Requests against the fake server ----------------------------------------------------------

class HttpClientTest : public ::testing::Test {
 protected:
  HttpClientTest() {
    // The developer's own proxy must not route the tests' requests.
    for (const char* name : {"HTTPS_PROXY", "https_proxy", "NO_PROXY", "no_proxy"}) environment.unset(name);
  }

  static HttpSettings quick_settings() {
    HttpSettings settings;
    settings.connect_timeout = 3s;
    settings.idle_timeout = 3s;
    settings.proxy_from_environment = false;
    return settings;
  }

  static HttpRequest request_to(const std::string& url, std::string method = "GET", std::string body = "") {
    HttpRequest request;
    request.method = std::move(method);
    auto parsed = Url::parse(url);
    EXPECT_TRUE(parsed.ok()) << url;
    if (parsed.ok()) request.url = *parsed;
    request.body = std::move(body);
    return request;
  }

  // Runs `task` on the test's io_context to its end and returns its value (or throws).
  template <typename T>
  T run(asio::awaitable<T> task) {
    auto future = asio::co_spawn(io, std::move(task), asio::use_future);
    io.restart();
    io.run();
    return future.get();
  }

  struct Reply {
    unsigned status = 0;
    std::string body;
    std::optional<std::string> content_type;
  };

  static asio::awaitable<Reply> fetch(HttpClient& client, HttpRequest request) {
    auto response = co_await client.send(std::move(request));
    Reply reply;
    reply.status = response->status();
    reply.content_type = response->header("CONTENT-type");
    reply.body = co_await response->read_all();
    co_return reply;
  }

  // The HttpError that `task` ends with; fails the test if it ends otherwise.
  template <typename T>
  std::optional<HttpError> failure_of(asio::awaitable<T> task) {
    try {
      run(std::move(task));
      ADD_FAILURE() << "expected an HttpError";
    } catch (const HttpError& error) {
      return error;
    } catch (const std::exception& error) {
      ADD_FAILURE() << "unexpected exception: " << error.what();
    }
    return std::nullopt;
  }

  ScopedEnvironment environment;
  asio::io_context io;
};

TEST_F(HttpClientTest, RefusesPlainHttpToAHostThatIsNotLoopback) {
  HttpClient client(io.get_executor(), quick_settings());
  auto error = failure_of(fetch(client, request_to("http://example.com/v1")));
  ASSERT_TRUE(error);
  EXPECT_EQ(error->kind(), HttpError::Kind::connect);
  EXPECT_STREQ(error->what(), "Plain HTTP is allowed only to loopback servers; use https:// for example.com.");
}

TEST_F(HttpClientTest, PostsAndRecordsHeadersAndBody) {
  FakeHttpServer server;
  server.enqueue(FakeResponse::json(200, R"({"ok":true})"));
  HttpClient client(io.get_executor(), quick_settings());
  auto request = request_to(server.url("/v1/messages?beta=true"), "POST", R"({"model":"m"})");
  request.headers = {{"x-api-key", "sk-test"}, {"content-type", "application/json"}, {"Host", "ignored"}};

  Reply reply = run(fetch(client, request));
  EXPECT_EQ(reply.status, 200u);
  EXPECT_EQ(reply.body, R"({"ok":true})");
  EXPECT_EQ(reply.content_type, "application/json");

  auto requests = server.requests();
  ASSERT_EQ(requests.size(), 1u);
  EXPECT_EQ(requests[0].method, "POST");
  EXPECT_EQ(requests[0].target, "/v1/messages?beta=true");
  EXPECT_EQ(requests[0].header("X-Api-Key"), "sk-test");
  EXPECT_EQ(requests[0].header("host"), "127.0.0.1:" + std::to_string(server.port()));
  EXPECT_EQ(requests[0].header("content-length"), std::to_string(request.body.size()));
  EXPECT_EQ(requests[0].body, R"({"model":"m"})");
}

TEST_F(HttpClientTest, RefusesAHeaderValueWithALineBreakWithoutQuotingIt) {
  FakeHttpServer server;
  HttpClient client(io.get_executor(), quick_settings());
  auto request = request_to(server.url("/"));
  request.headers = {{"x-api-key", "sk-secret\r\nX-Evil: 1"}};
  auto error = failure_of(fetch(client, request));
  ASSERT_TRUE(error);
  EXPECT_EQ(error->kind(), HttpError::Kind::protocol);
  EXPECT_EQ(std::string(error->what()).find("sk-secret"), std::string::npos);
  EXPECT_TRUE(server.requests().empty());
}

TEST_F(HttpClientTest, DeliversAChunkedStreamPieceByPiece) {
  FakeHttpServer server;
  server.enqueue(FakeResponse::event_stream({{"data: first\n\n"}, {"data: second\n\n", 400ms}}));
  HttpClient client(io.get_executor(), quick_settings());

  struct Timeline {
    std::vector<std::string> pieces;
    std::vector<Clock::time_point> arrivals;
  };
  auto read_stream = [](HttpClient& http, HttpRequest request) -> asio::awaitable<Timeline> {
    auto response = co_await http.send(std::move(request));
    Timeline timeline;
    for (;;) {
      auto piece = co_await response->read_some();
      if (!piece) break;
      timeline.pieces.push_back(*piece);
      timeline.arrivals.push_back(Clock::now());
    }
    co_return timeline;
  };
  Timeline timeline = run(read_stream(client, request_to(server.url("/stream"), "POST", "{}")));
  ASSERT_EQ(timeline.pieces.size(), 2u);
  EXPECT_EQ(timeline.pieces[0], "data: first\n\n");
  EXPECT_EQ(timeline.pieces[1], "data: second\n\n");
  // The first piece came out while the server was still waiting to send the second.
  EXPECT_GE(timeline.arrivals[1] - timeline.arrivals[0], 300ms);
}

TEST_F(HttpClientTest, ReadsContentLengthAndReadUntilCloseBodies) {
  FakeHttpServer server;
  FakeResponse pieces;
  pieces.pieces = {{"abc"}, {"def", 20ms}, {"ghi", 20ms}};
  server.enqueue(pieces);
  FakeResponse until_close;
  until_close.framing = FakeResponse::Framing::until_close;
  until_close.pieces = {{"to the"}, {" end", 20ms}};
  server.enqueue(until_close);
  FakeResponse empty;
  empty.status = 204;
  server.enqueue(empty);

  HttpClient client(io.get_executor(), quick_settings());
  EXPECT_EQ(run(fetch(client, request_to(server.url("/a")))).body, "abcdefghi");
  EXPECT_EQ(run(fetch(client, request_to(server.url("/b")))).body, "to the end");
  Reply no_content = run(fetch(client, request_to(server.url("/c"))));
  EXPECT_EQ(no_content.status, 204u);
  EXPECT_EQ(no_content.body, "");
}

TEST_F(HttpClientTest, ReusesAKeptAliveConnection) {
  FakeHttpServer server;
  server.enqueue(FakeResponse::json(200, "1"));
  server.enqueue(FakeResponse::event_stream({{"data: 2\n\n"}}));
  server.enqueue(FakeResponse::json(200, "3"));
  HttpClient client(io.get_executor(), quick_settings());
  EXPECT_EQ(run(fetch(client, request_to(server.url("/1")))).body, "1");
  EXPECT_EQ(run(fetch(client, request_to(server.url("/2")))).body, "data: 2\n\n");
  EXPECT_EQ(run(fetch(client, request_to(server.url("/3")))).body, "3");
  EXPECT_EQ(server.requests().size(), 3u);
  EXPECT_EQ(server.connections_accepted(), 1u);
}

TEST_F(HttpClientTest, OpensANewConnectionWhenTheServerSaysClose) {
  FakeHttpServer server;
  FakeResponse closing = FakeResponse::json(200, "1");
  closing.keep_alive = false;
  server.enqueue(closing);
  server.enqueue(FakeResponse::json(200, "2"));
  HttpClient client(io.get_executor(), quick_settings());
  EXPECT_EQ(run(fetch(client, request_to(server.url("/1")))).body, "1");
  EXPECT_EQ(run(fetch(client, request_to(server.url("/2")))).body, "2");
  EXPECT_EQ(server.connections_accepted(), 2u);
}

TEST_F(HttpClientTest, RetriesOnceWhenAKeptAliveConnectionWasClosedMeanwhile) {
  FakeHttpServer server;
  FakeResponse stale = FakeResponse::json(200, "1");
  stale.close_silently = true;
  server.enqueue(stale);
  server.enqueue(FakeResponse::json(200, "2"));
  HttpClient client(io.get_executor(), quick_settings());
  EXPECT_EQ(run(fetch(client, request_to(server.url("/1")))).body, "1");
  std::this_thread::sleep_for(50ms);  // let the server's close arrive
  EXPECT_EQ(run(fetch(client, request_to(server.url("/2"), "POST", "{}"))).body, "2");
  EXPECT_EQ(server.requests().size(), 2u);
  EXPECT_EQ(server.connections_accepted(), 2u);
}

TEST_F(HttpClientTest, AResponseLeftUnreadClosesItsConnection) {
  FakeHttpServer server;
  server.enqueue(FakeResponse::event_stream({{"data: 1\n\n"}, {"data: 2\n\n", 100ms}}));
  server.enqueue(FakeResponse::json(200, "next"));
  HttpClient client(io.get_executor(), quick_settings());
  auto first_piece_only = [](HttpClient& http, HttpRequest request) -> asio::awaitable<std::string> {
    auto response = co_await http.send(std::move(request));
    auto piece = co_await response->read_some();
    co_return piece.value_or("");
  };
  EXPECT_EQ(run(first_piece_only(client, request_to(server.url("/1")))), "data: 1\n\n");
  EXPECT_EQ(run(fetch(client, request_to(server.url("/2")))).body, "next");
  EXPECT_EQ(server.connections_accepted(), 2u);
}

TEST_F(HttpClientTest, FailsWhenTheServerClosesMidBody) {
  FakeHttpServer server;
  FakeResponse short_length = FakeResponse::json(200, "partial");
  short_length.close_mid_body = true;
  server.enqueue(short_length);
  FakeResponse short_chunks = FakeResponse::event_stream({{"data: 1\n\n"}});
  short_chunks.close_mid_body = true;
  server.enqueue(short_chunks);
  HttpClient client(io.get_executor(), quick_settings());
  for (const char* target : {"/length", "/chunked"}) {
    auto error = failure_of(fetch(client, request_to(server.url(target))));
    ASSERT_TRUE(error) << target;
    EXPECT_EQ(error->kind(), HttpError::Kind::closed) << target << ": " << error->what();
    EXPECT_NE(std::string(error->what()).find("in the middle of the response body"), std::string::npos);
  }
}

TEST_F(HttpClientTest, RefusesMalformedHttp) {
  FakeHttpServer server;
  FakeResponse garbage;
  garbage.raw_bytes = "HTTP/1.1 2x0 Nope\r\nContent-Length: 3\r\n\r\nabc";
  server.enqueue(garbage);
  FakeResponse bad_chunk;
  bad_chunk.raw_bytes = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nabc\r\n";
  server.enqueue(bad_chunk);
  HttpClient client(io.get_executor(), quick_settings());
  for (const char* target : {"/head", "/chunk"}) {
    auto error = failure_of(fetch(client, request_to(server.url(target))));
    ASSERT_TRUE(error) << target;
    EXPECT_EQ(error->kind(), HttpError::Kind::protocol) << target << ": " << error->what();
  }
}

TEST_F(HttpClientTest, ReadAllStopsAtItsLimit) {
  FakeHttpServer server;
  server.enqueue(FakeResponse::json(200, std::string(100, 'x')));
  HttpClient client(io.get_executor(), quick_settings());
  auto read_limited = [](HttpClient& http, HttpRequest request) -> asio::awaitable<std::string> {
    auto response = co_await http.send(std::move(request));
    auto body = co_await response->read_all(10);
    co_return body;
  };
  auto error = failure_of(read_limited(client, request_to(server.url("/"))));
  ASSERT_TRUE(error);
  EXPECT_EQ(error->kind(), HttpError::Kind::protocol);
}

TEST_F(HttpClientTest, TimesOutAStalledStream) {
  FakeHttpServer server;
  FakeResponse stalled = FakeResponse::event_stream({{"data: 1\n\n"}});
  stalled.stall = true;
  server.enqueue(stalled);
  HttpSettings settings = quick_settings();
  settings.idle_timeout = 300ms;
  HttpClient client(io.get_executor(), settings);
  auto started = Clock::now();
  auto error = failure_of(fetch(client, request_to(server.url("/"))));
  auto elapsed = Clock::now() - started;
  ASSERT_TRUE(error);
  EXPECT_EQ(error->kind(), HttpError::Kind::timeout);
  EXPECT_EQ(std::string(error->what()), "127.0.0.1:" + std::to_string(server.port()) + " sent nothing for 0.3 s.");
  EXPECT_GE(elapsed, 250ms);
  EXPECT_LT(elapsed, 2s);
}

TEST_F(HttpClientTest, TimesOutAServerThatNeverAnswers) {
  // A listening socket that never accepts: the kernel completes the handshake and keeps
  // the request, and no answer ever comes.
  asio::ip::tcp::acceptor silent(io, {asio::ip::make_address("127.0.0.1"), 0});
  HttpSettings settings = quick_settings();
  settings.idle_timeout = 300ms;
  HttpClient client(io.get_executor(), settings);
  auto url = "http://127.0.0.1:" + std::to_string(silent.local_endpoint().port()) + "/";
  auto error = failure_of(fetch(client, request_to(url)));
  ASSERT_TRUE(error);
  EXPECT_EQ(error->kind(), HttpError::Kind::timeout);
  EXPECT_NE(std::string(error->what()).find("sent nothing for 0.3 s"), std::string::npos);
}

// A loopback listener whose accept queue is full: Linux drops further SYNs, so a connect
// to it hangs as one to a dead address would (10.255.255.1 and the like are not reliable:
// sandboxes and corporate networks answer or refuse them).
class FullListener {
 public:
  explicit FullListener(asio::io_context& io) : acceptor_(io) {
    asio::ip::tcp::endpoint endpoint(asio::ip::make_address("127.0.0.1"), 0);
    acceptor_.open(endpoint.protocol());
    acceptor_.bind(endpoint);
    acceptor_.listen(0);
    endpoint = acceptor_.local_endpoint();
    for (int filler = 0; filler < 2; ++filler) {
      UniqueFd fd(::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
      ::connect(fd.get(), endpoint.data(), static_cast<socklen_t>(endpoint.size()));
      fillers_.push_back(std::move(fd));
    }
    std::this_thread::sleep_for(50ms);  // the first filler's handshake completes
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(acceptor_.local_endpoint().port()) + "/"; }
  std::uint16_t port() const { return acceptor_.local_endpoint().port(); }

 private:
  asio::ip::tcp::acceptor acceptor_;
  std::vector<UniqueFd> fillers_;
};

TEST_F(HttpClientTest, TimesOutConnectingToAServerThatDoesNotAnswer) {
  FullListener listener(io);
  HttpSettings settings = quick_settings();
  settings.connect_timeout = 300ms;
  HttpClient client(io.get_executor(), settings);
  auto started = Clock::now();
  auto error = failure_of(fetch(client, request_to(listener.url())));
  auto elapsed = Clock::now() - started;
  ASSERT_TRUE(error);
  EXPECT_EQ(error->kind(), HttpError::Kind::timeout) << error->what();
  EXPECT_EQ(std::string(error->what()),
            "127.0.0.1:" + std::to_string(listener.port()) + " did not connect within 0.3 s.");
  EXPECT_GE(elapsed, 250ms);
  EXPECT_LT(elapsed, 2s);
}

TEST_F(HttpClientTest, ReportsARefusedConnection) {
  std::uint16_t port = 0;
  {
    asio::ip::tcp::acceptor closed(io, {asio::ip::make_address("127.0.0.1"), 0});
    port = closed.local_endpoint().port();
  }
  HttpClient client(io.get_executor(), quick_settings());
  auto error = failure_of(fetch(client, request_to("http://127.0.0.1:" + std::to_string(port) + "/")));
  ASSERT_TRUE(error);
  EXPECT_EQ(error->kind(), HttpError::Kind::connect);
  EXPECT_EQ(std::string(error->what()), "Could not connect to 127.0.0.1:" + std::to_string(port) + ": Connection refused.");
}

TEST_F(HttpClientTest, ReportsANameThatDoesNotResolve) {
  HttpClient client(io.get_executor(), quick_settings());
  auto error = failure_of(fetch(client, request_to("https://no-such-host.invalid/")));
  ASSERT_TRUE(error);
  if (error->kind() == HttpError::Kind::timeout) GTEST_SKIP() << "the resolver hangs here: " << error->what();
  EXPECT_EQ(error->kind(), HttpError::Kind::connect);
  EXPECT_NE(std::string(error->what()).find("Could not resolve no-such-host.invalid"), std::string::npos)
      << error->what();
}

// ---- Cancellation ------------------------------------------------------------------------------

class CancellationTest : public HttpClientTest {
 protected:
  // Runs `task`, emits terminal cancellation after `delay`, and returns how the task ended
  // and how long after the cancellation it took.
  template <typename T>
  std::pair<std::exception_ptr, Clock::duration> cancel_after(asio::awaitable<T> task, Clock::duration delay) {
    asio::cancellation_signal signal;
    std::exception_ptr outcome;
    bool finished = false;
    Clock::time_point finished_at;
    asio::co_spawn(io, std::move(task),
                   asio::bind_cancellation_slot(signal.slot(), [&](std::exception_ptr escaped, auto&&...) {
                     outcome = escaped;
                     finished = true;
                     finished_at = Clock::now();
                   }));
    asio::steady_timer timer(io, delay);
    Clock::time_point cancelled_at;
    timer.async_wait([&](boost::system::error_code) {
      cancelled_at = Clock::now();
      signal.emit(asio::cancellation_type::terminal);
    });
    io.restart();
    io.run();
    EXPECT_TRUE(finished);
    return {outcome, finished_at - cancelled_at};
  }

  static void expect_cancelled(std::exception_ptr outcome) {
    ASSERT_TRUE(outcome);
    try {
      std::rethrow_exception(outcome);
    } catch (const HttpError& error) {
      EXPECT_EQ(error.kind(), HttpError::Kind::cancelled) << error.what();
      EXPECT_STREQ(error.what(), "The request was cancelled.");
    } catch (const std::exception& error) {
      ADD_FAILURE() << "unexpected exception: " << error.what();
    }
  }
};

TEST_F(CancellationTest, CancelsAStalledReadAtOnce) {
  FakeHttpServer server;
  FakeResponse stalled = FakeResponse::event_stream({{"data: 1\n\n"}});
  stalled.stall = true;
  server.enqueue(stalled);
  server.enqueue(FakeResponse::json(200, "after"));
  HttpClient client(io.get_executor(), quick_settings());  // idle timeout 3 s: cancellation must win
  auto [outcome, took] = cancel_after(fetch(client, request_to(server.url("/stream"))), 200ms);
  expect_cancelled(outcome);
  EXPECT_LT(took, 1s);
  // The cancelled connection was not kept: the next request opens another.
  EXPECT_EQ(run(fetch(client, request_to(server.url("/next")))).body, "after");
  EXPECT_EQ(server.connections_accepted(), 2u);
}

TEST_F(CancellationTest, CancelsWhileWaitingForTheResponseHead) {
  asio::ip::tcp::acceptor silent(io, {asio::ip::make_address("127.0.0.1"), 0});
  HttpClient client(io.get_executor(), quick_settings());
  auto url = "http://127.0.0.1:" + std::to_string(silent.local_endpoint().port()) + "/";
  auto [outcome, took] = cancel_after(fetch(client, request_to(url)), 200ms);
  expect_cancelled(outcome);
  EXPECT_LT(took, 1s);
}

TEST_F(CancellationTest, CancelsConnecting) {
  FullListener listener(io);
  HttpSettings settings = quick_settings();
  settings.connect_timeout = 10s;
  HttpClient client(io.get_executor(), settings);
  auto [outcome, took] = cancel_after(fetch(client, request_to(listener.url())), 200ms);
  expect_cancelled(outcome);
  EXPECT_LT(took, 1s);
}

// ---- TLS --------------------------------------------------------------------------------------

TEST_F(HttpClientTest, TrustsTheServerSignedByTheConfiguredCa) {
  FakeHttpServer server(FakeServerOptions{.tls = true});
  server.enqueue(FakeResponse::json(200, "secure"));
  server.enqueue(FakeResponse::event_stream({{"data: again\n\n"}}));
  HttpSettings settings = quick_settings();
  settings.ca_file = server.ca_file();
  HttpClient client(io.get_executor(), settings);
  EXPECT_EQ(run(fetch(client, request_to(server.url("/v1")))).body, "secure");
  EXPECT_EQ(run(fetch(client, request_to(server.url("/v1")))).body, "data: again\n\n");
  EXPECT_EQ(server.connections_accepted(), 1u);
  EXPECT_EQ(server.requests().at(0).header("host"), "localhost:" + std::to_string(server.port()));
}

TEST_F(HttpClientTest, ChecksAnIpAddressAgainstTheCertificate) {
  FakeHttpServer server(FakeServerOptions{.tls = true});
  server.enqueue(FakeResponse::json(200, "by address"));
  HttpSettings settings = quick_settings();
  settings.ca_file = server.ca_file();
  HttpClient client(io.get_executor(), settings);
  auto url = "https://127.0.0.1:" + std::to_string(server.port()) + "/";
  EXPECT_EQ(run(fetch(client, request_to(url))).body, "by address");
}

TEST_F(HttpClientTest, RefusesACertificateItDoesNotTrust) {
  FakeHttpServer server(FakeServerOptions{.tls = true});
  HttpClient client(io.get_executor(), quick_settings());  // the system store only
  auto error = failure_of(fetch(client, request_to(server.url("/"))));
  ASSERT_TRUE(error);
  EXPECT_EQ(error->kind(), HttpError::Kind::tls);
  EXPECT_NE(std::string(error->what()).find("was not trusted"), std::string::npos) << error->what();
  EXPECT_TRUE(server.requests().empty());
}

TEST_F(HttpClientTest, RefusesACertificateForAnotherHost) {
  FakeHttpServer server(FakeServerOptions{.tls = true, .certificate_host = "wrong.example"});
  HttpSettings settings = quick_settings();
  settings.ca_file = server.ca_file();
  HttpClient client(io.get_executor(), settings);
  auto error = failure_of(fetch(client, request_to(server.url("/"))));
  ASSERT_TRUE(error);
  EXPECT_EQ(error->kind(), HttpError::Kind::tls);
  EXPECT_NE(std::string(error->what()).find("hostname mismatch"), std::string::npos) << error->what();
}

TEST_F(HttpClientTest, NamesAMissingOrBrokenCaFile) {
  HttpSettings settings = quick_settings();
  settings.ca_file = "/nonexistent/deskd-ca.pem";
  HttpClient missing(io.get_executor(), settings);
  auto error = failure_of(fetch(missing, request_to("https://localhost:1/")));
  ASSERT_TRUE(error);
  EXPECT_EQ(error->kind(), HttpError::Kind::tls);
  EXPECT_NE(std::string(error->what()).find("/nonexistent/deskd-ca.pem"), std::string::npos);

  settings.ca_file = "/proc/self/status";  // exists, holds no certificate
  HttpClient broken(io.get_executor(), settings);
  error = failure_of(fetch(broken, request_to("https://localhost:1/")));
  ASSERT_TRUE(error);
  EXPECT_EQ(error->kind(), HttpError::Kind::tls);
  EXPECT_NE(std::string(error->what()).find("/proc/self/status"), std::string::npos);
}

// ---- Through a proxy ------------------------------------------------------------------------

TEST_F(HttpClientTest, TunnelsHttpsThroughTheProxy) {
  // api.deskd.test resolves nowhere; only the proxy knows where it is, so a request that
  // arrives proves the tunnel.
  FakeHttpServer server(FakeServerOptions{.tls = true, .certificate_host = "api.deskd.test"});
  server.enqueue(FakeResponse::json(200, "tunnelled"));
  server.enqueue(FakeResponse::json(200, "again"));
  FakeConnectProxy proxy;
  proxy.route("api.deskd.test", server.port());
  environment.set("HTTPS_PROXY", proxy.url());
  HttpSettings settings = quick_settings();
  settings.proxy_from_environment = true;
  settings.ca_file = server.ca_file();
  HttpClient client(io.get_executor(), settings);

  EXPECT_EQ(run(fetch(client, request_to("https://api.deskd.test/v1/messages", "POST", "{}"))).body, "tunnelled");
  EXPECT_EQ(run(fetch(client, request_to("https://api.deskd.test/v1/messages", "POST", "{}"))).body, "again");
  auto connects = proxy.connect_requests();
  ASSERT_EQ(connects.size(), 1u);  // the tunnel was kept alive
  EXPECT_EQ(connects[0], "CONNECT api.deskd.test:443 HTTP/1.1\r\nHost: api.deskd.test:443\r\n\r\n");
  EXPECT_EQ(server.requests().at(0).header("host"), "api.deskd.test");
}

TEST_F(HttpClientTest, SendsProxyCredentialsButNeverShowsThem) {
  FakeConnectProxy proxy(407);
  environment.set("https_proxy", "http://user:secret@127.0.0.1:" + std::to_string(proxy.port()));
  HttpSettings settings = quick_settings();
  settings.proxy_from_environment = true;
  HttpClient client(io.get_executor(), settings);
  auto error = failure_of(fetch(client, request_to("https://api.deskd.test/")));
  ASSERT_TRUE(error);
  EXPECT_EQ(error->kind(), HttpError::Kind::connect);
  std::string message = error->what();
  EXPECT_NE(message.find("127.0.0.1:" + std::to_string(proxy.port())), std::string::npos) << message;
  EXPECT_NE(message.find("407"), std::string::npos) << message;
  EXPECT_EQ(message.find("secret"), std::string::npos) << message;
  EXPECT_EQ(message.find("dXNlcjpzZWNyZXQ"), std::string::npos) << message;
  auto connects = proxy.connect_requests();
  ASSERT_EQ(connects.size(), 1u);
  EXPECT_NE(connects[0].find("Proxy-Authorization: Basic dXNlcjpzZWNyZXQ=\r\n"), std::string::npos);
}

TEST_F(HttpClientTest, ReportsAProxyThatIsDown) {
  std::uint16_t port = 0;
  {
    asio::ip::tcp::acceptor closed(io, {asio::ip::make_address("127.0.0.1"), 0});
    port = closed.local_endpoint().port();
  }
  environment.set("HTTPS_PROXY", "http://127.0.0.1:" + std::to_string(port));
  HttpSettings settings = quick_settings();
  settings.proxy_from_environment = true;
  HttpClient client(io.get_executor(), settings);
  auto error = failure_of(fetch(client, request_to("https://api.deskd.test/")));
  ASSERT_TRUE(error);
  EXPECT_EQ(error->kind(), HttpError::Kind::connect);
  EXPECT_EQ(std::string(error->what()),
            "Could not connect to HTTPS proxy 127.0.0.1:" + std::to_string(port) + ": Connection refused.");
}

TEST_F(HttpClientTest, NoProxyBypassesTheProxy) {
  FakeConnectProxy proxy;
  environment.set("HTTPS_PROXY", proxy.url());
  environment.set("NO_PROXY", "example.org, .deskd.test");
  HttpSettings settings = quick_settings();
  settings.proxy_from_environment = true;
  HttpClient client(io.get_executor(), settings);
  // Straight to api.deskd.test, which does not resolve: the proxy never hears of it.
  auto error = failure_of(fetch(client, request_to("https://api.deskd.test/")));
  ASSERT_TRUE(error);
  EXPECT_TRUE(error->kind() == HttpError::Kind::connect || error->kind() == HttpError::Kind::timeout)
      << error->what();
  EXPECT_TRUE(proxy.connect_requests().empty());
}

}  // namespace
}  // namespace deskd::model
