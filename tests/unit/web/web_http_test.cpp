// What the web server answers a request with (runner/web/web_http.h), without a socket:
// the login over TCP, the CSRF checks of a POST, the assets and the headers every reply
// carries (docs/WEB.md).

#include <gtest/gtest.h>

#include "base/clock.h"
#include "runner/web/web_assets.h"
#include "runner/web/web_http.h"

namespace deskd::web {
namespace {

const control::ControlCaller kOperator{"uid 0 (root)", true};

WebRequest request(http::verb method, std::string target) {
  WebRequest made{method, target, 11};
  made.set(http::field::host, "127.0.0.1:8080");
  return made;
}

WebRequest json_post(std::string csrf) {
  WebRequest made = request(http::verb::post, "/api/op");
  made.set(http::field::content_type, "application/json");
  if (!csrf.empty()) made.set(kCsrfHeader, csrf);
  made.body() = R"({"op": "desks"})";
  return made;
}

class WebHttpTest : public ::testing::Test {
 protected:
  ManualClock clock_{std::chrono::system_clock::time_point(std::chrono::hours(500000))};
  WebLogins logins_{std::string(64, 'f'), clock_};
  const WebListener tcp_{true, false};
};

TEST_F(WebHttpTest, ATcpRequestWithoutTheTokenOrASessionCookieIsNobody) {
  EXPECT_FALSE(identify_tcp(request(http::verb::get, "/"), logins_, kOperator));
  WebRequest wrong_token = request(http::verb::get, "/");
  wrong_token.set(http::field::authorization, "Bearer " + std::string(64, 'e'));
  EXPECT_FALSE(identify_tcp(wrong_token, logins_, kOperator));
  WebRequest wrong_cookie = request(http::verb::get, "/");
  wrong_cookie.set(http::field::cookie, "deskd_session=" + std::string(64, '0'));
  EXPECT_FALSE(identify_tcp(wrong_cookie, logins_, kOperator));

  WebRequest bearer = request(http::verb::get, "/metrics");
  bearer.set(http::field::authorization, "Bearer " + std::string(64, 'f'));
  const auto by_token = identify_tcp(bearer, logins_, kOperator);
  ASSERT_TRUE(by_token);
  EXPECT_TRUE(by_token->bearer);
  EXPECT_TRUE(by_token->caller.privileged);
}

TEST_F(WebHttpTest, ALoginCodeBecomesAnHttpOnlyStrictCookieOnceAndTheSessionIdentifies) {
  auto code = logins_.mint_login_code();
  ASSERT_TRUE(code.ok());
  const WebResponse login = login_reply(request(http::verb::get, "/login?token=" + *code), logins_, tcp_);
  EXPECT_EQ(login.result(), http::status::see_other);
  EXPECT_EQ(login[http::field::location], "/");
  const std::string cookie(login[http::field::set_cookie]);
  EXPECT_NE(cookie.find("HttpOnly; SameSite=Strict; Path=/"), std::string::npos) << cookie;
  EXPECT_EQ(cookie.find("Secure"), std::string::npos) << "plain HTTP: no Secure";
  EXPECT_EQ(login.body().find(*code), std::string::npos);
  EXPECT_EQ(login_reply(request(http::verb::get, "/login?token=" + *code), logins_, tcp_).result(),
            http::status::unauthorized);

  WebRequest with_cookie = request(http::verb::get, "/api/session");
  with_cookie.set(http::field::cookie, "theme=dark; " + cookie.substr(0, cookie.find(';')));
  const auto identity = identify_tcp(with_cookie, logins_, kOperator);
  ASSERT_TRUE(identity);
  EXPECT_FALSE(identity->bearer);
  EXPECT_EQ(identity->csrf.size(), 64u);

  auto tls_code = logins_.mint_login_code();
  ASSERT_TRUE(tls_code.ok());
  const WebResponse over_tls =
      login_reply(request(http::verb::get, "/login?token=" + *tls_code), logins_, WebListener{true, true});
  EXPECT_NE(std::string(over_tls[http::field::set_cookie]).find("; Secure"), std::string::npos);
}

TEST_F(WebHttpTest, APostNeedsJsonItsOriginTheSessionsCsrfAndNoCrossSiteFetch) {
  const WebIdentity session{kOperator, "c5rf", false};
  const std::string origin = "http://127.0.0.1:8080";
  EXPECT_EQ(csrf_refusal(json_post("c5rf"), session, origin), "");
  EXPECT_NE(csrf_refusal(json_post(""), session, origin), "") << "no CSRF header";
  EXPECT_NE(csrf_refusal(json_post("other"), session, origin), "") << "a wrong CSRF header";
  WebRequest text = json_post("c5rf");
  text.set(http::field::content_type, "text/plain");
  EXPECT_NE(csrf_refusal(text, session, origin), "") << "a form's content type";
  WebRequest foreign = json_post("c5rf");
  foreign.set(http::field::origin, "https://evil.example");
  EXPECT_NE(csrf_refusal(foreign, session, origin), "") << "a foreign origin";
  WebRequest same = json_post("c5rf");
  same.set(http::field::origin, origin);
  EXPECT_EQ(csrf_refusal(same, session, origin), "");
  WebRequest cross = json_post("c5rf");
  cross.set("Sec-Fetch-Site", "cross-site");
  EXPECT_NE(csrf_refusal(cross, session, origin), "") << "Sec-Fetch-Site: cross-site";
  WebRequest charset = json_post("c5rf");
  charset.set(http::field::content_type, "application/json; charset=utf-8");
  EXPECT_EQ(csrf_refusal(charset, session, origin), "");
  // The token needs no CSRF value (no browser sends it by itself), but a form's type is still refused.
  const WebIdentity bearer{kOperator, "", true};
  EXPECT_EQ(csrf_refusal(json_post(""), bearer, origin), "");
  EXPECT_NE(csrf_refusal(text, bearer, origin), "");
  // A session without a CSRF value never passes.
  EXPECT_NE(csrf_refusal(json_post(""), WebIdentity{kOperator, "", false}, origin), "");
}

TEST_F(WebHttpTest, AssetsAreServedGzippedWhenAcceptedWithAStrongEtagAndTheSecurityHeaders) {
  const WebAsset* index = find_web_asset("index.html");
  ASSERT_NE(index, nullptr);
  EXPECT_EQ(index->content_type, "text/html; charset=utf-8");
  ASSERT_GE(index->gzip.size(), 2u);
  EXPECT_EQ(index->gzip[0], 0x1f);
  EXPECT_EQ(index->gzip[1], 0x8b);
  EXPECT_EQ(index->etag.front(), '"');

  WebRequest plain = request(http::verb::get, "/");
  const WebResponse plain_reply = asset_reply(plain, "index.html");
  EXPECT_EQ(plain_reply.result(), http::status::ok);
  EXPECT_EQ(plain_reply.count(http::field::content_encoding), 0u);
  EXPECT_EQ(plain_reply.body().size(), index->plain.size());
  EXPECT_EQ(plain_reply[http::field::etag], index->etag);
  EXPECT_EQ(plain_reply["Content-Security-Policy"], kContentSecurityPolicy);
  EXPECT_EQ(plain_reply["X-Content-Type-Options"], "nosniff");
  EXPECT_EQ(plain_reply["Referrer-Policy"], "no-referrer");

  WebRequest gzip = request(http::verb::get, "/");
  gzip.set(http::field::accept_encoding, "br, gzip;q=0.8");
  const WebResponse gzip_reply = asset_reply(gzip, "index.html");
  EXPECT_EQ(gzip_reply[http::field::content_encoding], "gzip");
  EXPECT_EQ(gzip_reply.body().size(), index->gzip.size());
  WebRequest refused = request(http::verb::get, "/");
  refused.set(http::field::accept_encoding, "gzip;q=0");
  EXPECT_EQ(asset_reply(refused, "index.html").count(http::field::content_encoding), 0u);

  WebRequest again = request(http::verb::get, "/");
  again.set(http::field::if_none_match, index->etag);
  EXPECT_EQ(asset_reply(again, "index.html").result(), http::status::not_modified);
  EXPECT_EQ(asset_reply(plain, "../web.token").result(), http::status::not_found);
}

TEST_F(WebHttpTest, ApiRepliesAreNotStoredAndQueryParametersAreDecoded) {
  const WebResponse reply = make_reply(request(http::verb::get, "/api/session"), http::status::ok, "{}");
  EXPECT_EQ(reply[http::field::cache_control], "no-store");
  EXPECT_EQ(reply["Content-Security-Policy"], kContentSecurityPolicy);
  EXPECT_EQ(query_parameter("/api/events?replay=1&desk=my%2Ddesk", "desk"), "my-desk");
  EXPECT_EQ(query_parameter("/api/events?desk=", "desk"), "");
  EXPECT_FALSE(query_parameter("/api/events", "desk"));
  EXPECT_EQ(request_path("/api/events?desk=a"), "/api/events");
}

}  // namespace
}  // namespace deskd::web

namespace deskd::web {
namespace {

TEST(WebHostTest, OnlyLoopbackNamesAreLoopback) {
  for (const char* host : {"localhost", "LOCALHOST:8440", "deskd.localhost", "127.0.0.1", "127.1.2.3:80", "[::1]",
                           "[::1]:8440"}) {
    EXPECT_TRUE(is_loopback_host(host)) << host;
  }
  for (const char* host : {"", "rebound.example", "localhost.example", "127.0.0.1.evil.example", "128.0.0.1",
                           "[::2]", "[::1", "127.0.0.x", "evillocalhost"}) {
    EXPECT_FALSE(is_loopback_host(host)) << host;
  }
}

}  // namespace
}  // namespace deskd::web
