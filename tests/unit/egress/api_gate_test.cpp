// The API gate between real TLS ends on loopback: a desk-side client that trusts only the
// desk's CA, the gate, and an upstream server whose certificate comes from a CA of its own
// (the API's ca_file). The clock is a ManualClock, so time windows and rates are tested
// without waiting; approvals are decided from the test as deskctl would.

#include <gtest/gtest.h>

#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/asio/use_future.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/write.hpp>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <future>
#include <string>
#include <vector>

#include "base/asio_await.h"
#include "base/random_id.h"
#include "runner/egress/api_gate.h"

namespace deskd::egress {
namespace {

namespace asio = boost::asio;
namespace ssl = asio::ssl;
namespace http = boost::beast::http;
using asio::awaitable;
using asio::ip::tcp;
using Request = http::request<http::string_body>;
using Response = http::response<http::string_body>;

constexpr const char* kKey = "secret-api-key:secret-access-token";

struct Received {
  std::string method;
  std::string target;
  std::string authorization;
  std::string algo;
  std::string body;
};

// 2026-12-04 (a Friday) at `hour`:`minute` India time.
std::chrono::system_clock::time_point india(int hour, int minute) {
  using namespace std::chrono;
  return sys_days(year{2026} / December / 4) + hours(hour) + minutes(minute) - minutes(330);
}

class ApiGateTest : public ::testing::Test {
 protected:
  void SetUp() override {
    folder_ = std::filesystem::temp_directory_path() / ("deskd-api-gate-" + random_hex(6));
    std::filesystem::create_directories(folder_);
    std::ofstream(folder_ / "key") << kKey << "\n";
    upstream_ca_ = DeskAuthority::create("upstream", {"broker.test"}).value();
    std::ofstream(folder_ / "upstream-ca.pem") << upstream_ca_->certificate_pem();

    upstream_acceptor_.open(tcp::v4());
    upstream_acceptor_.bind({asio::ip::make_address("127.0.0.1"), 0});
    upstream_acceptor_.listen();
    upstream_port_ = upstream_acceptor_.local_endpoint().port();
    asio::co_spawn(io_, serve_upstream(), asio::detached);

    gate_acceptor_.open(tcp::v4());
    gate_acceptor_.bind({asio::ip::make_address("127.0.0.1"), 0});
    gate_acceptor_.listen();
  }

  void TearDown() override {
    std::error_code ignored;
    std::filesystem::remove_all(folder_, ignored);
  }

  policy::ApiSpec spec() const {
    policy::ApiSpec api;
    api.name = "kite";
    api.origins = {policy::ApiOrigin{"https", "broker.test", upstream_port_}};
    api.addresses = {"127.0.0.1"};
    api.ca_file = folder_ / "upstream-ca.pem";
    policy::ApiCredential credential;
    credential.variable = "KITE_AUTH";
    credential.key_file = folder_ / "key";
    credential.placement = policy::CredentialPlacement::header;
    credential.name = "Authorization";
    credential.template_text = "token {key}";
    api.credentials = {credential};
    api.added_fields = {policy::ApiAddedField{policy::ApiAddedField::Kind::header, "X-Algo-Id", "ALGO-42", {"POST"}, "/orders/**"}};
    policy::ApiRule quotes;
    quotes.name = "quotes";
    quotes.methods = {"GET"};
    quotes.path = "/quote/**";
    quotes.action = policy::ApiAction::allow;
    policy::ApiRule orders;
    orders.name = "orders";
    orders.methods = {"POST"};
    orders.path = "/orders/regular";
    orders.action = policy::ApiAction::allow;
    orders.rate = policy::ApiRate{10, policy::ApiRate::Per::second, "10/second"};
    orders.window = policy::ApiTimeWindow{true, {}, false, "nse_session"};
    orders.checks = {policy::parse_body_check("quantity <= 100").value()};
    policy::ApiRule big;
    big.name = "big orders";
    big.methods = {"POST"};
    big.path = "/orders/big";
    big.action = policy::ApiAction::ask;
    api.rules = {quotes, orders, big};
    api.maximum_body_bytes = 4096;
    api.approval_timeout = std::chrono::seconds(2);
    return api;
  }

  void make_gate() {
    ApiGateSettings settings;
    settings.desk = "nifty";
    settings.apis = {spec()};
    settings.ledger = ApiLedger::open(folder_ / "state", *clock_).value();
    settings.approvals = board_;
    settings.clock = clock_;
    settings.moment_at = [](std::chrono::system_clock::time_point now) {
      const auto since_midnight = (now + std::chrono::minutes(330)).time_since_epoch() % std::chrono::days(1);
      policy::ApiMoment moment;
      moment.now = now;
      moment.india_minute_of_day = static_cast<int>(std::chrono::duration_cast<std::chrono::minutes>(since_midnight).count());
      moment.trading_day = true;
      moment.india_day = std::chrono::duration_cast<std::chrono::days>((now + std::chrono::minutes(330)).time_since_epoch()).count();
      return moment;
    };
    settings.events = [this](std::string_view kind, boost::json::object data) {
      events_.emplace_back(std::string(kind), std::move(data));
    };
    gate_ = ApiGate::create(std::move(settings)).value();
    asio::co_spawn(io_, accept_for_gate(), asio::detached);
  }

  awaitable<void> serve_upstream() {
    auto context = upstream_ca_->server_context("broker.test").value();
    for (;;) {
      auto [error, socket] = co_await upstream_acceptor_.async_accept(kAwait);
      if (error) co_return;
      asio::co_spawn(io_, serve_upstream_connection(std::move(socket), context), asio::detached);
    }
  }

  awaitable<void> serve_upstream_connection(tcp::socket socket, std::shared_ptr<ssl::context> context) {
    ssl::stream<tcp::socket> stream(std::move(socket), *context);
    if (auto [error] = co_await stream.async_handshake(ssl::stream_base::server, kAwait); error) co_return;
    boost::beast::flat_buffer buffer;
    for (;;) {
      Request request;
      if (auto [error, got] = co_await http::async_read(stream, buffer, request, kAwait); error) co_return;
      received_.push_back(Received{std::string(request.method_string()), std::string(request.target()),
                                   std::string(request[http::field::authorization]), std::string(request["X-Algo-Id"]),
                                   request.body()});
      Response response{http::status::ok, 11};
      response.set(http::field::content_type, "application/json");
      response.body() = R"({"status":"success"})";
      response.keep_alive(request.keep_alive());
      response.prepare_payload();
      if (auto [error, written] = co_await http::async_write(stream, response, kAwait); error) co_return;
    }
  }

  awaitable<void> accept_for_gate() {
    for (;;) {
      auto [error, socket] = co_await gate_acceptor_.async_accept(kAwait);
      if (error) co_return;
      const auto* api = gate_->api_for("broker.test", upstream_port_);
      asio::co_spawn(io_, gate_->serve(std::move(socket), *api, gate_->origin_for(*api, "broker.test", upstream_port_), ""),
                     asio::detached);
    }
  }

  // The desk's side: one kept-alive connection that trusts only the desk's CA.
  struct Desk {
    ssl::context context{ssl::context::tls_client};
    std::unique_ptr<ssl::stream<tcp::socket>> stream;
    boost::beast::flat_buffer buffer;
  };

  std::unique_ptr<Desk> connect() {
    auto desk = std::make_unique<Desk>();
    desk->context.add_certificate_authority(asio::buffer(gate_->authority_pem()));
    desk->context.set_verify_mode(ssl::verify_peer);
    desk->stream = std::make_unique<ssl::stream<tcp::socket>>(io_, desk->context);
    SSL_set_tlsext_host_name(desk->stream->native_handle(), "broker.test");
    X509_VERIFY_PARAM_set1_host(SSL_get0_param(desk->stream->native_handle()), "broker.test", 0);
    auto connected = asio::co_spawn(
        io_,
        [&]() -> awaitable<bool> {
          auto [error] = co_await desk->stream->next_layer().async_connect(gate_acceptor_.local_endpoint(), kAwait);
          if (error) co_return false;
          auto [shaken] = co_await desk->stream->async_handshake(ssl::stream_base::client, kAwait);
          co_return !shaken;
        },
        asio::use_future);
    run_until(connected);
    EXPECT_TRUE(connected.get()) << "the desk could not shake hands with the gate, trusting only its CA";
    return desk;
  }

  Response send(Desk& desk, Request request, std::chrono::seconds limit = std::chrono::seconds(10)) {
    request.version(11);
    if (request.find(http::field::host) == request.end()) request.set(http::field::host, "broker.test");
    request.prepare_payload();
    auto answered = asio::co_spawn(
        io_,
        [&]() -> awaitable<Response> {
          Response response;
          if (auto [error, written] = co_await http::async_write(*desk.stream, request, kAwait); error) co_return response;
          (void)co_await http::async_read(*desk.stream, desk.buffer, response, kAwait);
          co_return response;
        },
        asio::use_future);
    run_until(answered, limit);
    return answered.get();
  }

  template <class Future>
  void run_until(Future& future, std::chrono::seconds limit = std::chrono::seconds(10)) {
    const auto deadline = std::chrono::steady_clock::now() + limit;
    while (future.wait_for(std::chrono::seconds(0)) != std::future_status::ready &&
           std::chrono::steady_clock::now() < deadline) {
      io_.run_for(std::chrono::milliseconds(5));
    }
    ASSERT_EQ(future.wait_for(std::chrono::seconds(0)), std::future_status::ready) << "no answer in time";
  }

  static Request order(int quantity, std::string path = "/orders/regular") {
    Request request{http::verb::post, path, 11};
    request.set(http::field::content_type, "application/x-www-form-urlencoded");
    request.body() = "tradingsymbol=INFY&exchange=NSE&quantity=" + std::to_string(quantity) + "&price=1500";
    return request;
  }

  std::string ledger() const {
    std::ifstream file(folder_ / "state" / "ledger.jsonl");
    return std::string(std::istreambuf_iterator<char>(file), {});
  }

  asio::io_context io_;
  std::filesystem::path folder_;
  std::shared_ptr<DeskAuthority> upstream_ca_;
  tcp::acceptor upstream_acceptor_{io_};
  tcp::acceptor gate_acceptor_{io_};
  std::uint16_t upstream_port_ = 0;
  std::shared_ptr<ManualClock> clock_ = std::make_shared<ManualClock>(india(10, 0));
  std::shared_ptr<ApprovalBoard> board_ = std::make_shared<ApprovalBoard>("nifty");
  std::shared_ptr<ApiGate> gate_;
  std::vector<Received> received_;
  std::vector<std::pair<std::string, boost::json::object>> events_;
};

TEST_F(ApiGateTest, TheKeyGoesUpstreamAndThePlaceholderIsAllTheDeskHolds) {
  make_gate();
  const auto environment = gate_->environment();
  ASSERT_EQ(environment.size(), 1u);
  const std::string placeholder = environment[0].substr(std::string("KITE_AUTH=").size());
  EXPECT_EQ(placeholder.find(kKey), std::string::npos);
  auto desk = connect();
  Request with_placeholder{http::verb::get, "/quote?i=NSE:INFY", 11};
  with_placeholder.set(http::field::authorization, "token " + placeholder);
  EXPECT_EQ(send(*desk, with_placeholder).result_int(), 200u);
  Request without{http::verb::get, "/quote/ltp?i=NSE:INFY", 11};
  EXPECT_EQ(send(*desk, without).result_int(), 200u) << "the credential is added where the desk wrote none";
  ASSERT_EQ(received_.size(), 2u);
  EXPECT_EQ(received_[0].authorization, std::string("token ") + kKey);
  EXPECT_EQ(received_[1].authorization, std::string("token ") + kKey);
  EXPECT_EQ(ledger().find(kKey), std::string::npos) << "the ledger never holds the key";
  EXPECT_NE(ledger().find("\"outcome\":\"answered\""), std::string::npos);
}

TEST_F(ApiGateTest, RulesRefuseByPathBodyRateAndTimeAndNothingRefusedGoesUpstream) {
  make_gate();
  auto desk = connect();
  auto unknown = send(*desk, Request{http::verb::delete_, "/orders/regular/1", 11});
  EXPECT_EQ(unknown.result_int(), 403u);
  EXPECT_NE(unknown.body().find("no rule allows"), std::string::npos) << unknown.body();
  auto too_many = send(*desk, order(500));
  EXPECT_EQ(too_many.result_int(), 403u);
  EXPECT_NE(too_many.body().find("quantity"), std::string::npos) << too_many.body();
  EXPECT_TRUE(received_.empty());
  for (int index = 0; index < 10; ++index) EXPECT_EQ(send(*desk, order(10)).result_int(), 200u);
  auto eleventh = send(*desk, order(10));
  EXPECT_EQ(eleventh.result_int(), 403u);
  EXPECT_NE(eleventh.body().find("10/second"), std::string::npos) << eleventh.body();
  ASSERT_EQ(received_.size(), 10u);
  EXPECT_EQ(received_[0].algo, "ALGO-42") << "the fixed field is added";
  clock_->set(india(16, 0));
  auto closed = send(*desk, order(10));
  EXPECT_EQ(closed.result_int(), 403u);
  EXPECT_NE(closed.body().find("nse_session"), std::string::npos) << closed.body();
  EXPECT_EQ(received_.size(), 10u);
  bool refusal_seen = false;
  for (const auto& [kind, data] : events_) refusal_seen = refusal_seen || kind == "API_REFUSED";
  EXPECT_TRUE(refusal_seen);
}

TEST_F(ApiGateTest, AnAskedRequestGoesOnlyOnceApprovedAndADeniedOneNever) {
  make_gate();
  auto desk = connect();
  auto decide_when_waiting = [this](bool approve) {
    return asio::co_spawn(
        io_,
        [this, approve]() -> awaitable<void> {
          for (int tries = 0; tries < 400 && board_->pending().empty(); ++tries) co_await expire_after(std::chrono::milliseconds(5));
          if (!board_->pending().empty()) (void)board_->decide(board_->pending().front().id, approve, "tester");
        },
        asio::use_future);
  };
  auto approving = decide_when_waiting(true);
  EXPECT_EQ(send(*desk, order(5, "/orders/big")).result_int(), 200u);
  ASSERT_EQ(received_.size(), 1u);
  auto denying = decide_when_waiting(false);
  auto denied = send(*desk, order(6, "/orders/big"));
  EXPECT_EQ(denied.result_int(), 403u);
  EXPECT_NE(denied.body().find("denied by tester"), std::string::npos) << denied.body();
  auto timed_out = send(*desk, order(7, "/orders/big"));
  EXPECT_EQ(timed_out.result_int(), 403u);
  EXPECT_EQ(received_.size(), 1u);
  EXPECT_NE(ledger().find("\"outcome\":\"timed_out\""), std::string::npos);
  EXPECT_NE(ledger().find("\"outcome\":\"approved\""), std::string::npos);
}

TEST_F(ApiGateTest, BadInputGetsItsStatusAndAFailedUpstreamA502) {
  make_gate();
  auto desk = connect();
  Request wrong_host{http::verb::get, "/quote", 11};
  wrong_host.set(http::field::host, "elsewhere.test");
  EXPECT_EQ(send(*desk, wrong_host).result_int(), 400u);
  desk = connect();
  auto large = order(1);
  large.body().append(8192, 'x');
  EXPECT_EQ(send(*desk, large).result_int(), 413u);
  upstream_acceptor_.close();
  desk = connect();
  // The kept connection upstream is gone with the test's listener only for new ones: a new
  // gate connection makes a new upstream connection, which is refused.
  auto failed = send(*desk, Request{http::verb::get, "/quote", 11});
  EXPECT_EQ(failed.result_int(), 502u) << failed.body();
  EXPECT_TRUE(received_.empty());
}

}  // namespace
}  // namespace deskd::egress
