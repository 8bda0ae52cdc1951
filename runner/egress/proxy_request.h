#pragma once
// What a desk asked its egress proxy for, from the request line of an HTTP proxy request:
//   CONNECT host:port HTTP/1.1            a tunnel (TLS passes through untouched)
//   GET http://host[:port]/path HTTP/1.1  plain HTTP, forwarded in origin form
// Pure parsing; the proxy (egress_proxy.cpp) reads the head with Beast and asks here.

#include <cstdint>
#include <string>
#include <string_view>

#include "base/result.h"

namespace deskd::egress {

struct ProxyTarget {
  bool tunnel = false;        ///< CONNECT
  std::string host;           ///< a name, or an address literal without brackets
  std::uint16_t port = 0;
  std::string origin_target;  ///< plain HTTP: "/path?query" to send to the origin
  std::string authority;      ///< plain HTTP: the Host header to send ("host[:port]")
};

/// The target of `method` `target`. Refuses (invalid_argument, a one-line reason) what a
/// proxy must not forward: an origin-form target, a scheme other than http:// for plain
/// requests (https:// must use CONNECT: no interception), user info, a missing or bad port.
Result<ProxyTarget> parse_proxy_target(std::string_view method, std::string_view target);

}  // namespace deskd::egress
