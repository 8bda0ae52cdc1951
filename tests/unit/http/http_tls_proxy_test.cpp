// The HTTP client's TLS and proxy: a certificate made for the test trusted through the
// configured CA and refused otherwise, and HTTPS tunnelled through a CONNECT proxy.
#include "runner/http/http_client.h"

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
