#include "runner/egress/proxy_request.h"

#include <algorithm>
#include <cctype>
#include <charconv>

namespace deskd::egress {
namespace {

Error bad(std::string why) { return Error::make(ErrorCode::invalid_argument, std::move(why)); }

// "host:port", "[v6]:port" or (when `default_port` is set) just "host" / "[v6]".
Result<ProxyTarget> split_authority(std::string_view authority, std::uint16_t default_port) {
  ProxyTarget target;
  if (authority.find('@') != std::string_view::npos) return bad("user information in the address is not forwarded");
  std::string_view host = authority;
  std::string_view port_text;
  if (!host.empty() && host.front() == '[') {
    const std::size_t close = host.find(']');
    if (close == std::string_view::npos) return bad("the host's '[' has no ']'");
    const std::string_view rest = host.substr(close + 1);
    if (!rest.empty()) {
      if (rest.front() != ':') return bad("only ':PORT' may follow ']'");
      port_text = rest.substr(1);
    }
    host = host.substr(1, close - 1);
  } else if (const std::size_t colon = host.rfind(':'); colon != std::string_view::npos) {
    port_text = host.substr(colon + 1);
    host = host.substr(0, colon);
    if (host.find(':') != std::string_view::npos) return bad("an IPv6 address must be written in brackets");
  }
  if (host.empty()) return bad("no host was named");
  for (const char c : host) {
    if (std::isalnum(static_cast<unsigned char>(c)) == 0 && c != '.' && c != '-' && c != '_' && c != ':') {
      return bad("the host name holds characters a host name cannot");
    }
  }
  if (port_text.empty()) {
    if (default_port == 0) return bad("CONNECT needs host:port");
    target.port = default_port;
  } else {
    unsigned port = 0;
    const auto [end, error] = std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
    if (error != std::errc() || end != port_text.data() + port_text.size() || port == 0 || port > 65535) {
      return bad("the port must be a number from 1 to 65535");
    }
    target.port = static_cast<std::uint16_t>(port);
  }
  target.host = std::string(host);
  return target;
}

}  // namespace

Result<ProxyTarget> parse_proxy_target(std::string_view method, std::string_view target) {
  if (method == "CONNECT") {
    DESKD_ASSIGN_OR_RETURN(auto parsed, split_authority(target, 0));
    parsed.tunnel = true;
    return parsed;
  }
  constexpr std::string_view kScheme = "http://";
  const bool has_http = target.size() > kScheme.size() &&
                        std::equal(kScheme.begin(), kScheme.end(), target.begin(),
                                   [](char a, char b) { return a == std::tolower(static_cast<unsigned char>(b)); });
  if (!has_http) {
    if (target.find("://") != std::string_view::npos) {
      return bad("only http:// is forwarded as a plain request; https goes through CONNECT, untouched");
    }
    return bad("a proxy request needs an absolute http:// URL (is the proxy set as HTTP_PROXY?)");
  }
  const std::string_view rest = target.substr(kScheme.size());
  const std::size_t path_start = std::min(rest.find_first_of("/?#"), rest.size());
  const std::string_view authority = rest.substr(0, path_start);
  DESKD_ASSIGN_OR_RETURN(auto parsed, split_authority(authority, 80));
  std::string path(rest.substr(path_start));
  if (const std::size_t fragment = path.find('#'); fragment != std::string::npos) path.resize(fragment);
  if (path.empty() || path.front() != '/') path.insert(path.begin(), '/');
  parsed.origin_target = std::move(path);
  parsed.authority = std::string(authority);
  return parsed;
}

}  // namespace deskd::egress
