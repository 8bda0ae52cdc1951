// The request line of an HTTP proxy request as the egress proxy reads it: CONNECT
// authorities, absolute http:// URLs turned into origin form, and what is refused.

#include "runner/egress/proxy_request.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace deskd::egress {
namespace {

using ::testing::HasSubstr;

TEST(ProxyRequestTest, ConnectNamesHostAndPort) {
  auto target = parse_proxy_target("CONNECT", "api.example.com:443");
  ASSERT_TRUE(target.ok());
  EXPECT_TRUE(target->tunnel);
  EXPECT_EQ(target->host, "api.example.com");
  EXPECT_EQ(target->port, 443);
  auto v6 = parse_proxy_target("CONNECT", "[2001:db8::1]:8443");
  ASSERT_TRUE(v6.ok());
  EXPECT_EQ(v6->host, "2001:db8::1");
  EXPECT_EQ(v6->port, 8443);
}

TEST(ProxyRequestTest, APlainRequestGoesOnInOriginForm) {
  auto target = parse_proxy_target("GET", "http://www.example.com/a/b?c=d#frag");
  ASSERT_TRUE(target.ok());
  EXPECT_FALSE(target->tunnel);
  EXPECT_EQ(target->host, "www.example.com");
  EXPECT_EQ(target->port, 80);
  EXPECT_EQ(target->origin_target, "/a/b?c=d");
  EXPECT_EQ(target->authority, "www.example.com");
  auto ported = parse_proxy_target("POST", "HTTP://h.example:8080");
  ASSERT_TRUE(ported.ok());
  EXPECT_EQ(ported->port, 8080);
  EXPECT_EQ(ported->origin_target, "/");
  auto query = parse_proxy_target("GET", "http://h.example?x=1");
  ASSERT_TRUE(query.ok());
  EXPECT_EQ(query->origin_target, "/?x=1");
}

TEST(ProxyRequestTest, RefusesWhatAProxyMustNotForward) {
  const std::tuple<const char*, const char*, const char*> cases[] = {
      {"GET", "/index.html", "absolute http:// URL"},
      {"GET", "https://www.example.com/", "CONNECT"},
      {"GET", "ftp://www.example.com/", "CONNECT"},
      {"GET", "http://user:pass@www.example.com/", "user information"},
      {"GET", "http://www.example.com:0/", "port"},
      {"GET", "http://www.example.com:99999/", "port"},
      {"CONNECT", "www.example.com", "host:port"},
      {"CONNECT", ":443", "no host"},
      {"CONNECT", "2001:db8::1:443", "brackets"},
      {"GET", "http://bad host/", "characters"},
  };
  for (const auto& [method, target, why] : cases) {
    auto parsed = parse_proxy_target(method, target);
    ASSERT_FALSE(parsed.ok()) << method << " " << target;
    EXPECT_THAT(parsed.error().what, HasSubstr(why)) << method << " " << target;
  }
}

}  // namespace
}  // namespace deskd::egress
