// The HTTP client against the fake server on loopback: requests, bodies, keep-alive,
// failures, timeouts and cancellation, the client's io_context run by the test thread.
#include "runner/http/http_client.h"

#include <sys/socket.h>

#include <gtest/gtest.h>

#include <boost/asio.hpp>

#include <map>
#include <thread>

#include "base/unique_fd.h"
#include "runner/http/http_proxy.h"
#include "unit/http/http_test_support.h"
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
using testing::HttpClientTest;
using testing::ScopedEnvironment;
using Clock = std::chrono::steady_clock;

// ---- Requests against the fake server ----------------------------------------------------------

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

}  // namespace
}  // namespace deskd::model
