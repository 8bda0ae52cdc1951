// The HTTP client's pure parts: URLs, the loopback rule, and choosing a proxy.
#include "runner/http/http_client.h"

#include <stdlib.h>

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

}  // namespace
}  // namespace deskd::model
