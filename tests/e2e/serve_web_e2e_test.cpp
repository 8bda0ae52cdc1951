// `deskd serve`'s web page (docs/WEB.md) as a process: the Unix socket's peer checks, the
// TCP login (web.token, one-time links, session cookies), forged cross-site POSTs refused
// and changing nothing, the token never in a log, an event or the journal, TLS with a
// certificate the test makes, oversized requests answered and survived, and a desk's turn
// streamed as Server-Sent Events.

#include <sys/stat.h>
#include <unistd.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <regex>
#include <thread>

#include "e2e/daemon_fixture.h"
#include "e2e/serve_test_support.h"
#include "e2e/web_client.h"

namespace deskd::e2e {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::Not;

constexpr const char* kHello = R"({"text": "hello from the script"})"
                               "\n";

class ServeWebE2eTest : public ServeE2eTest {
 protected:
  static std::string web_socket(const ServeDaemon& daemon) { return daemon.folder() + "/state/web.sock"; }

  // The csrf of the web socket's session.
  static std::string unix_csrf(const ServeDaemon& daemon) {
    auto client = WebClient::unix_socket(web_socket(daemon));
    auto reply = client.exchange(http_request("GET", "/api/session"));
    if (!reply) return "";
    return field(parsed(reply->body), "csrf");
  }

  // `deskctl web-url`'s link, and the port it names.
  static std::pair<std::string, int> login_link(const ServeDaemon& daemon) {
    const auto result = daemon.deskctl({"web-url"});
    EXPECT_EQ(result.exit_code, 0) << describe(result);
    const std::string url = trimmed(result.output);
    std::smatch match;
    const std::regex pattern("https?://127\\.0\\.0\\.1:([0-9]+)(/login\\?token=[0-9a-f]+)");
    if (!std::regex_match(url, match, pattern)) {
      ADD_FAILURE() << "not a login link: " << url;
      return {"", 0};
    }
    return {match[2], std::stoi(match[1])};
  }

  static std::vector<std::pair<std::string, std::string>> json_headers(const std::string& csrf) {
    return {{"Content-Type", "application/json"}, {"X-Deskd-Csrf", csrf}};
  }
};

TEST_F(ServeWebE2eTest, TheWebSocketServesPageAndOpsToAllowedPeersAndNothingToOthers) {
  ServeDaemon daemon({{"one", kHello}});
  ASSERT_NO_FATAL_FAILURE(start(daemon));
  auto client = WebClient::unix_socket(web_socket(daemon));
  ASSERT_TRUE(client.connected());
  const auto page = client.exchange(http_request("GET", "/", {{"Accept-Encoding", "gzip"}}));
  ASSERT_TRUE(page);
  EXPECT_EQ(page->status, 200);
  EXPECT_EQ(page->header("Content-Encoding"), "gzip");
  EXPECT_THAT(page->header("Content-Security-Policy"), HasSubstr("script-src 'self'"));
  EXPECT_EQ(page->header("X-Content-Type-Options"), "nosniff");
  const auto session = client.exchange(http_request("GET", "/api/session"));
  ASSERT_TRUE(session);
  EXPECT_EQ(session->header("Cache-Control"), "no-store");
  // A page that rebinds its own name to the forwarded socket is not answered (the socket has
  // no login): only loopback names are.
  const auto rebound = client.exchange(http_request("GET", "/api/session", {}, {}, "rebound.example:8440"));
  ASSERT_TRUE(rebound);
  EXPECT_EQ(rebound->status, 421);
  EXPECT_THAT(rebound->body, Not(HasSubstr("csrf")));
  for (const char* host : {"127.0.0.1:8440", "[::1]:8440", "deskd.localhost"}) {
    const auto loopback = client.exchange(http_request("GET", "/api/session", {}, {}, host));
    ASSERT_TRUE(loopback) << host;
    EXPECT_EQ(loopback->status, 200) << host;
  }
  const auto identity = parsed(session->body);
  EXPECT_EQ(field(identity, "user"), "uid " + std::to_string(::geteuid()) + (::geteuid() == 0 ? " (root)" : ""))
      << session->body;
  const auto desks = client.exchange(
      http_request("POST", "/api/op", json_headers(field(identity, "csrf")), R"({"id": 1, "op": "desks"})"));
  ASSERT_TRUE(desks);
  EXPECT_EQ(desks->status, 200);
  EXPECT_THAT(desks->body, HasSubstr(R"("name":"one")"));
  const auto follow =
      client.exchange(http_request("POST", "/api/op", json_headers(field(identity, "csrf")), R"({"op": "follow"})"));
  ASSERT_TRUE(follow);
  EXPECT_THAT(follow->body, HasSubstr("/api/events"));
  const auto metrics = client.exchange(http_request("GET", "/metrics"));
  ASSERT_TRUE(metrics);
  EXPECT_EQ(metrics->status, 200);
  EXPECT_THAT(metrics->body, HasSubstr("deskd_turns_started_total"));

  if (::geteuid() != 0) GTEST_SKIP() << "connecting as another uid needs root";
  // The socket and its folder open to everyone: only deskd's own check stands between uid
  // 4242 and the page.
  ::chmod(web_socket(daemon).c_str(), 0666);
  ::chmod((daemon.folder() + "/state").c_str(), 0755);
  for (const char* target : {"/", "/api/session", "/metrics"}) {
    const std::string seen = http_as_other_user(web_socket(daemon), 4242, http_request("GET", target));
    EXPECT_THAT(seen, testing::StartsWith("HTTP/1.1 403")) << target << ": " << seen;
    EXPECT_THAT(seen, Not(HasSubstr("csrf"))) << seen;
  }
}

TEST_F(ServeWebE2eTest, TcpNeedsALoginForgedPostsChangeNothingAndTheTokenNeverShows) {
  ServeDaemon daemon({{"one", kHello}}, "web_listen = \"127.0.0.1:0\"\n");
  ASSERT_NO_FATAL_FAILURE(start(daemon));
  const std::string token_file = daemon.folder() + "/state/web.token";
  struct stat status {};
  ASSERT_EQ(::stat(token_file.c_str(), &status), 0);
  EXPECT_EQ(status.st_mode & 0777, 0600u);
  const std::string token = trimmed(file_text(token_file));
  ASSERT_EQ(token.size(), 64u);
  const auto [login, port] = login_link(daemon);
  ASSERT_GT(port, 0);

  auto client = WebClient::tcp(port);
  for (const char* target : {"/", "/assets/index.html", "/api/session", "/metrics", "/api/events"}) {
    const auto refused = client.exchange(http_request("GET", target));
    ASSERT_TRUE(refused) << target;
    EXPECT_EQ(refused->status, 401) << target;
  }
  const auto op =
      client.exchange(http_request("POST", "/api/op", {{"Content-Type", "application/json"}}, R"({"op": "desks"})"));
  ASSERT_TRUE(op);
  EXPECT_EQ(op->status, 401);
  for (const auto& [name, value] :
       std::vector<std::pair<std::string, std::string>>{{"Authorization", "Bearer " + std::string(64, '0')},
                                                        {"Authorization", "Basic " + token},
                                                        {"Cookie", "deskd_session=" + std::string(64, '0')}}) {
    const auto wrong = client.exchange(http_request("GET", "/api/session", {{name, value}}));
    ASSERT_TRUE(wrong);
    EXPECT_EQ(wrong->status, 401) << name << ": " << value;
  }
  const auto wrong_code = client.exchange(http_request("GET", "/login?token=" + std::string(48, '0')));
  ASSERT_TRUE(wrong_code);
  EXPECT_EQ(wrong_code->status, 401);
  const auto with_token = client.exchange(http_request("GET", "/api/session", {{"Authorization", "Bearer " + token}}));
  ASSERT_TRUE(with_token);
  EXPECT_EQ(with_token->status, 200);

  // The one-time link: a cookie once, then never again.
  const auto logged_in = client.exchange(http_request("GET", login));
  ASSERT_TRUE(logged_in);
  EXPECT_EQ(logged_in->status, 303);
  const std::string set_cookie = logged_in->header("Set-Cookie");
  EXPECT_THAT(set_cookie, HasSubstr("HttpOnly; SameSite=Strict; Path=/"));
  const auto again = client.exchange(http_request("GET", login));
  ASSERT_TRUE(again);
  EXPECT_EQ(again->status, 401);
  const std::string cookie = set_cookie.substr(0, set_cookie.find(';'));
  const auto session = client.exchange(http_request("GET", "/api/session", {{"Cookie", cookie}}));
  ASSERT_TRUE(session);
  ASSERT_EQ(session->status, 200);
  const std::string csrf = field(parsed(session->body), "csrf");
  ASSERT_EQ(csrf.size(), 64u);

  // Forged cross-site POSTs: each refused, and the desk never hears of them.
  const std::string send = R"({"op": "send", "desk": "one", "text": "forged-request-text"})";
  const std::string origin = "http://localhost";
  const std::vector<std::vector<std::pair<std::string, std::string>>> forgeries = {
      {{"Cookie", cookie}, {"Content-Type", "application/json"}},
      {{"Cookie", cookie}, {"Content-Type", "application/json"}, {"X-Deskd-Csrf", std::string(64, 'a')}},
      {{"Cookie", cookie},
       {"Content-Type", "application/json"},
       {"X-Deskd-Csrf", csrf},
       {"Origin", "https://evil.example"}},
      {{"Cookie", cookie},
       {"Content-Type", "application/json"},
       {"X-Deskd-Csrf", csrf},
       {"Sec-Fetch-Site", "cross-site"}},
      {{"Cookie", cookie}, {"Content-Type", "text/plain"}, {"X-Deskd-Csrf", csrf}},
  };
  for (const auto& headers : forgeries) {
    const auto refused = client.exchange(http_request("POST", "/api/op", headers, send));
    ASSERT_TRUE(refused);
    EXPECT_EQ(refused->status, 403) << refused->head;
  }
  const auto sent = client.exchange(http_request(
      "POST", "/api/op",
      {{"Cookie", cookie}, {"Content-Type", "application/json"}, {"X-Deskd-Csrf", csrf}, {"Origin", origin}},
      R"({"op": "send", "desk": "one", "text": "the real request"})"));
  ASSERT_TRUE(sent);
  EXPECT_EQ(sent->status, 200);
  EXPECT_EQ(field(parsed(sent->body), "ok"), "true") << sent->body;
  const auto events = daemon.deskctl({"events", "one"});
  EXPECT_THAT(events.output, HasSubstr("the real request"));
  EXPECT_THAT(events.output, Not(HasSubstr("forged-request-text")));
  EXPECT_THAT(file_text(daemon.journal_path("one")), Not(HasSubstr("forged-request-text")));

  // The token and the login code: in no log line, event or journal line.
  const std::string code = login.substr(login.find('=') + 1);
  const std::string log = daemon.process().error_output();
  EXPECT_THAT(log, HasSubstr("web"));
  for (const std::string& secret : {token, code}) {
    EXPECT_THAT(log, Not(HasSubstr(secret)));
    EXPECT_THAT(events.output, Not(HasSubstr(secret)));
    EXPECT_THAT(file_text(daemon.journal_path("one")), Not(HasSubstr(secret)));
  }
}

TEST_F(ServeWebE2eTest, OversizedAndBrokenRequestsAreAnsweredAndTheServerGoesOn) {
  ServeDaemon daemon({{"one", kHello}});
  ASSERT_NO_FATAL_FAILURE(start(daemon));
  {
    auto client = WebClient::unix_socket(web_socket(daemon));
    const auto headers = client.exchange(http_request("GET", "/", {{"X-Padding", std::string(20000, 'a')}}));
    ASSERT_TRUE(headers);
    EXPECT_EQ(headers->status, 431);
    EXPECT_TRUE(client.closed_by_peer());
  }
  {
    auto client = WebClient::unix_socket(web_socket(daemon));
    const std::string big = "POST /api/op HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: " +
                            std::to_string(2 << 20) + "\r\n\r\n";
    const auto body = client.exchange(big);
    ASSERT_TRUE(body);
    EXPECT_EQ(body->status, 413);
  }
  {
    auto client = WebClient::unix_socket(web_socket(daemon));
    const auto garbage = client.exchange("HELLO THERE\r\n\r\n");
    ASSERT_TRUE(garbage);
    EXPECT_EQ(garbage->status, 400);
  }
  {
    auto client = WebClient::unix_socket(web_socket(daemon));
    const auto method = client.exchange(http_request("DELETE", "/api/op"));
    ASSERT_TRUE(method);
    EXPECT_EQ(method->status, 405);
    const auto missing = client.exchange(http_request("GET", "/nowhere"));
    ASSERT_TRUE(missing);
    EXPECT_EQ(missing->status, 404);
    const auto csrf = unix_csrf(daemon);
    const auto bad_json = client.exchange(http_request("POST", "/api/op", json_headers(csrf), "{not json"));
    ASSERT_TRUE(bad_json);
    EXPECT_EQ(bad_json->status, 200);
    EXPECT_EQ(field(parsed(bad_json->body), "code"), "bad_request");
  }
  auto client = WebClient::unix_socket(web_socket(daemon));
  const auto after = client.exchange(http_request("GET", "/api/session"));
  ASSERT_TRUE(after);
  EXPECT_EQ(after->status, 200);
  EXPECT_EQ(daemon.deskctl({"desks"}).exit_code, 0);
}

// The control socket's admission rule on the web's listeners: TCP clients, whoever they
// are (any local user reaches a loopback port), get one user's share (a quarter of
// [runner] max_clients); deskd's own uid (this test) gets the places kept for it beyond
// max_clients, and is told so past them.
TEST_F(ServeWebE2eTest, TcpClientsGetOneUsersShareAndThePlacesKeptForTheOperatorHold) {
  ServeDaemon daemon({{"one", kHello}}, "web_listen = \"127.0.0.1:0\"\nmax_clients = 16\n");
  ASSERT_NO_FATAL_FAILURE(start(daemon));
  const int port = login_link(daemon).second;
  ASSERT_NE(port, 0);
  std::vector<WebClient> tcp;
  for (int index = 0; index < 4; ++index) {
    tcp.push_back(WebClient::tcp(port));
    ASSERT_TRUE(tcp.back().connected());
    std::this_thread::sleep_for(50ms);  // accepted in this order
  }
  auto fifth = WebClient::tcp(port);
  EXPECT_TRUE(fifth.closed_by_peer(5s)) << "a fifth TCP client was served past the TCP clients' share";
  for (auto& client : tcp) EXPECT_FALSE(client.closed_by_peer(50ms));

  // 4 TCP clients and 16 of deskd's own: max_clients and the 4 places kept.
  std::vector<WebClient> own;
  for (int index = 0; index < 16; ++index) {
    own.push_back(WebClient::unix_socket(web_socket(daemon)));
    const auto reply = own.back().exchange(http_request("GET", "/api/session"));
    ASSERT_TRUE(reply) << index;
    ASSERT_EQ(reply->status, 200) << index;
  }
  auto past = WebClient::unix_socket(web_socket(daemon));
  const auto refused = past.read_reply(10s);
  ASSERT_TRUE(refused);
  EXPECT_EQ(refused->status, 503);
  EXPECT_THAT(refused->body, HasSubstr("places kept for root and deskd's own user are taken"));
  own.pop_back();  // one gone: a place again
  std::this_thread::sleep_for(100ms);
  auto again = WebClient::unix_socket(web_socket(daemon));
  const auto served = again.exchange(http_request("GET", "/api/session"));
  ASSERT_TRUE(served);
  EXPECT_EQ(served->status, 200);
}

TEST_F(ServeWebE2eTest, EventsStreamADesksTurnAsServerSentEvents) {
  ServeDaemon daemon({{"one", kHello}, {"two", kHello}});
  ASSERT_NO_FATAL_FAILURE(start(daemon));
  auto stream = WebClient::unix_socket(web_socket(daemon));
  ASSERT_TRUE(stream.send(http_request("GET", "/api/events?desk=one")));
  EXPECT_THAT(stream.read_until("\r\n\r\n", 10s), HasSubstr("Content-Type: text/event-stream"));
  auto client = WebClient::unix_socket(web_socket(daemon));
  const std::string csrf = unix_csrf(daemon);
  for (const char* desk : {"two", "one"}) {
    const auto sent =
        client.exchange(http_request("POST", "/api/op", json_headers(csrf),
                                     std::string(R"({"op": "send", "desk": ")") + desk + R"(", "text": "go"})"));
    ASSERT_TRUE(sent);
    EXPECT_EQ(field(parsed(sent->body), "ok"), "true") << sent->body;
  }
  const std::string seen = stream.read_until("TRIGGER_FINISHED", 30s);
  EXPECT_THAT(seen, HasSubstr("event: event\ndata: {"));
  EXPECT_THAT(seen, HasSubstr("\"kind\":\"TURN_STARTED\""));
  EXPECT_THAT(seen, HasSubstr("hello from the script"));
  EXPECT_THAT(seen, HasSubstr("\"kind\":\"TRIGGER_FINISHED\""));
  EXPECT_THAT(seen, Not(HasSubstr("\"desk\":\"two\""))) << "only the desk asked for";
}

TEST_F(ServeWebE2eTest, ANonLoopbackListenerNeedsTlsAndServesWithTheOperatorsCertificate) {
  ServeDaemon plain({{"one", kHello}}, "web_listen = \"0.0.0.0:0\"\n");
  DeskdProcess check({"check", "--config", plain.config_path()});
  (void)check.read_rest();
  EXPECT_EQ(check.wait(), 2);
  // [runner], state_folder, socket, shutdown_grace_seconds, then web_listen on line 5.
  EXPECT_THAT(check.error_output(), HasSubstr(plain.config_path() + ":5:14: 'web_listen' '0.0.0.0' is not a loopback"));

  ServeDaemon daemon({{"one", kHello}},
                     "web_listen = \"0.0.0.0:0\"\nweb_tls_cert = \"cert.pem\"\n"
                     "web_tls_key = \"key.pem\"\n");
  ASSERT_TRUE(write_test_certificate(daemon.folder() + "/cert.pem", daemon.folder() + "/key.pem"));
  ASSERT_NO_FATAL_FAILURE(start(daemon));
  const auto result = daemon.deskctl({"web-url"});
  ASSERT_EQ(result.exit_code, 0) << describe(result);
  std::smatch match;
  const std::string url = trimmed(result.output);
  ASSERT_TRUE(std::regex_match(url, match, std::regex("https://[^/:]+:([0-9]+)(/login\\?token=[0-9a-f]+)"))) << url;
  auto client = WebClient::tls(std::stoi(match[1]));
  ASSERT_TRUE(client.connected()) << "TLS handshake";
  const auto refused = client.exchange(http_request("GET", "/api/session"));
  ASSERT_TRUE(refused);
  EXPECT_EQ(refused->status, 401);
  const auto logged_in = client.exchange(http_request("GET", match[2].str()));
  ASSERT_TRUE(logged_in);
  EXPECT_EQ(logged_in->status, 303);
  EXPECT_THAT(logged_in->header("Set-Cookie"), HasSubstr("; Secure"));
  const std::string token = trimmed(file_text(daemon.folder() + "/state/web.token"));
  const auto session = client.exchange(http_request("GET", "/api/session", {{"Authorization", "Bearer " + token}}));
  ASSERT_TRUE(session);
  EXPECT_EQ(session->status, 200);
  // Plain HTTP on the TLS port gets nothing.
  auto plain_client = WebClient::tcp(std::stoi(match[1]));
  EXPECT_FALSE(plain_client.exchange(http_request("GET", "/api/session"), 3s).has_value());
}

}  // namespace
}  // namespace deskd::e2e
