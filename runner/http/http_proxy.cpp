#include "runner/http/http_proxy.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>

#include "base/ascii_text.h"

namespace deskd::model {

namespace {

int hex_value(char digit) {
  if (digit >= '0' && digit <= '9') return digit - '0';
  if (digit >= 'a' && digit <= 'f') return digit - 'a' + 10;
  if (digit >= 'A' && digit <= 'F') return digit - 'A' + 10;
  return -1;
}

// user%40corp:p%3Ass in a URL means user@corp:p:ss on the wire.
std::string percent_decode(std::string_view text) {
  std::string decoded;
  for (std::size_t index = 0; index < text.size(); ++index) {
    if (text[index] == '%' && index + 2 < text.size() && hex_value(text[index + 1]) >= 0 && hex_value(text[index + 2]) >= 0) {
      decoded.push_back(static_cast<char>(hex_value(text[index + 1]) * 16 + hex_value(text[index + 2])));
      index += 2;
    } else {
      decoded.push_back(text[index]);
    }
  }
  return decoded;
}

std::string base64(std::string_view bytes) {
  static constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string encoded;
  std::size_t index = 0;
  for (; index + 2 < bytes.size(); index += 3) {
    unsigned triple = (static_cast<unsigned char>(bytes[index]) << 16) |
                      (static_cast<unsigned char>(bytes[index + 1]) << 8) | static_cast<unsigned char>(bytes[index + 2]);
    encoded += kAlphabet[(triple >> 18) & 63];
    encoded += kAlphabet[(triple >> 12) & 63];
    encoded += kAlphabet[(triple >> 6) & 63];
    encoded += kAlphabet[triple & 63];
  }
  std::size_t left = bytes.size() - index;
  if (left > 0) {
    unsigned triple = static_cast<unsigned char>(bytes[index]) << 16;
    if (left == 2) triple |= static_cast<unsigned char>(bytes[index + 1]) << 8;
    encoded += kAlphabet[(triple >> 18) & 63];
    encoded += kAlphabet[(triple >> 12) & 63];
    encoded += left == 2 ? kAlphabet[(triple >> 6) & 63] : '=';
    encoded += '=';
  }
  return encoded;
}

const char* first_set(const char* upper, const char* lower) {
  const char* value = std::getenv(upper);
  if (value == nullptr || *value == '\0') value = std::getenv(lower);
  return value != nullptr && *value != '\0' ? value : nullptr;
}

}  // namespace

std::string ProxyServer::description() const {
  bool ipv6 = host.find(':') != std::string::npos;
  return (ipv6 ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

Result<ProxyServer> parse_proxy_url(std::string_view text) {
  text = trim(text);
  std::string_view rest = text;
  if (auto separator = rest.find("://"); separator != std::string_view::npos) {
    std::string scheme = lowercase(rest.substr(0, separator));
    if (scheme != "http") {
      return Error::make(ErrorCode::invalid_argument, "The HTTPS proxy must be an http:// URL; \"" + scheme +
                                                          "://\" proxies are not supported.");
    }
    rest = rest.substr(separator + 3);
  }
  rest = rest.substr(0, rest.find_first_of("/?#"));
  ProxyServer proxy;
  if (auto at = rest.rfind('@'); at != std::string_view::npos) {
    proxy.authorization = "Basic " + base64(percent_decode(rest.substr(0, at)));
    rest = rest.substr(at + 1);
  }
  auto parsed = Url::parse("http://" + std::string(rest) + "/");
  if (!parsed.ok()) {
    return Error::make(ErrorCode::invalid_argument,
                       "The HTTPS proxy setting is not a usable proxy URL (write http://host:port).");
  }
  proxy.host = parsed->host;
  proxy.port = parsed->port;
  return proxy;
}

bool no_proxy_excludes(std::string_view no_proxy, std::string_view host) {
  std::string lowered_host = lowercase(host);
  if (lowered_host.ends_with('.')) lowered_host.pop_back();
  while (!no_proxy.empty()) {
    auto comma = no_proxy.find(',');
    std::string entry = lowercase(trim(no_proxy.substr(0, comma)));
    no_proxy = comma == std::string_view::npos ? std::string_view{} : no_proxy.substr(comma + 1);
    if (entry == "*") return true;
    if (entry.starts_with('[')) {
      // [::1] or [::1]:8080
      auto close = entry.find(']');
      entry = close == std::string::npos ? entry.substr(1) : entry.substr(1, close - 1);
    } else if (std::count(entry.begin(), entry.end(), ':') == 1) {
      entry.erase(entry.find(':'));  // host:port matches the host on any port
    }
    if (entry.starts_with("*.")) entry.erase(0, 2);
    if (entry.starts_with('.')) entry.erase(0, 1);
    if (entry.ends_with('.')) entry.pop_back();
    if (entry.empty()) continue;
    if (lowered_host == entry) return true;
    if (lowered_host.size() > entry.size() && lowered_host.ends_with(entry) &&
        lowered_host[lowered_host.size() - entry.size() - 1] == '.') {
      return true;
    }
  }
  return false;
}

Result<std::optional<ProxyServer>> proxy_from_environment(const Url& url) {
  if (url.scheme != "https" || is_loopback_host(url.host)) return std::optional<ProxyServer>{};
  const char* proxy_text = first_set("HTTPS_PROXY", "https_proxy");
  if (proxy_text == nullptr) return std::optional<ProxyServer>{};
  if (const char* no_proxy = first_set("NO_PROXY", "no_proxy"); no_proxy != nullptr && no_proxy_excludes(no_proxy, url.host)) {
    return std::optional<ProxyServer>{};
  }
  DESKD_ASSIGN_OR_RETURN(ProxyServer proxy, parse_proxy_url(proxy_text));
  return std::optional<ProxyServer>(std::move(proxy));
}

}  // namespace deskd::model
