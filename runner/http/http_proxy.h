#pragma once
// Which proxy, if any, carries an HTTPS request: HTTPS_PROXY / NO_PROXY, read the way curl
// reads them. Only http:// proxies are supported (the tunnel is opened with CONNECT and
// TLS runs end to end through it). Credentials in the proxy URL are sent as
// Proxy-Authorization and never appear in a message.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "base/result.h"
#include "runner/http/http_client.h"

namespace deskd::model {

struct ProxyServer {
  std::string host;
  std::uint16_t port = 0;
  std::string authorization;  ///< "Basic ..." when the URL had user:password@, else ""
  /// "host:port", for messages (never the credentials).
  std::string description() const;
};

/// Parses "http://[user:password@]host[:port][/]" or "host[:port]" (port 80 by default).
/// Refuses other schemes (https:// proxies are not supported). Errors never quote the text.
Result<ProxyServer> parse_proxy_url(std::string_view text);

/// Whether a NO_PROXY list ("a.com, .b.org, 10.0.0.1, *") excludes `host`: "*" excludes
/// all; an entry matches the host itself or, as a domain suffix, its subdomains (a leading
/// "." or "*." is optional). Entries with a port match the host on any port.
bool no_proxy_excludes(std::string_view no_proxy, std::string_view host);

/// The proxy for `url` from the environment (HTTPS_PROXY, then https_proxy; NO_PROXY, then
/// no_proxy): none for plain http, loopback hosts, excluded hosts, or when unset.
/// Fails when the variable is set but unusable.
Result<std::optional<ProxyServer>> proxy_from_environment(const Url& url);

}  // namespace deskd::model
