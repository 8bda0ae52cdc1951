// Url and the loopback rule, declared in http_client.h; kept apart so that they compile
// without Beast.
#include <boost/asio/ip/address.hpp>

#include <algorithm>
#include <cctype>
#include <charconv>

#include "base/ascii_text.h"
#include "runner/http/http_client.h"

namespace deskd::model {

namespace {

Error bad_url(std::string why) { return Error::make(ErrorCode::invalid_argument, std::move(why)); }

// Host names as DNS writes them; anything else (spaces, '%', '\\') is a typo or a trick.
bool is_host_name(std::string_view host) {
  return !host.empty() && std::all_of(host.begin(), host.end(), [](unsigned char character) {
    return std::isalnum(character) || character == '-' || character == '.' || character == '_';
  });
}

// A path with a space or a control character would let a URL split the request line.
bool is_clean_target(std::string_view target) {
  return std::none_of(target.begin(), target.end(),
                      [](unsigned char character) { return character <= 0x20 || character == 0x7f; });
}

}  // namespace

Result<Url> Url::parse(std::string_view text) {
  Url url;
  auto separator = text.find("://");
  if (separator == std::string_view::npos) {
    return bad_url("The URL \"" + std::string(text) + "\" has no scheme; write https://host/path.");
  }
  url.scheme = lowercase(text.substr(0, separator));
  if (url.scheme != "http" && url.scheme != "https") {
    return bad_url("The URL scheme \"" + url.scheme + "\" is not supported; use https:// (or http:// for a loopback server).");
  }
  std::string_view rest = text.substr(separator + 3);
  if (auto fragment = rest.find('#'); fragment != std::string_view::npos) rest = rest.substr(0, fragment);
  auto authority_end = rest.find_first_of("/?");
  std::string_view authority = rest.substr(0, authority_end);
  std::string_view target = authority_end == std::string_view::npos ? std::string_view{} : rest.substr(authority_end);

  // The URL is echoed in messages and logs, so it must not carry a secret.
  if (authority.find('@') != std::string_view::npos) {
    return bad_url("The URL must not carry a user name or password (user:password@host); give credentials another way.");
  }

  std::string_view host;
  std::string_view port_text;
  bool has_port = false;
  if (authority.starts_with('[')) {
    auto close = authority.find(']');
    if (close == std::string_view::npos) return bad_url("The URL's IPv6 address has no closing ']'.");
    host = authority.substr(1, close - 1);
    std::string_view after = authority.substr(close + 1);
    if (!after.empty()) {
      if (!after.starts_with(':')) return bad_url("The URL has stray text after its IPv6 address.");
      port_text = after.substr(1);
      has_port = true;
    }
    boost::system::error_code error;
    boost::asio::ip::make_address_v6(std::string(host), error);
    if (error) return bad_url("\"" + std::string(host) + "\" is not an IPv6 address.");
  } else {
    auto colon = authority.find(':');
    host = authority.substr(0, colon);
    if (colon != std::string_view::npos) {
      port_text = authority.substr(colon + 1);
      has_port = true;
    }
    if (host.empty()) return bad_url("The URL \"" + std::string(text) + "\" has no host.");
    if (!is_host_name(host)) return bad_url("The URL's host \"" + std::string(host) + "\" is not a valid host name.");
  }
  url.host = lowercase(host);

  url.port = url.scheme == "https" ? 443 : 80;
  if (has_port) {
    unsigned value = 0;
    auto [end, error] = std::from_chars(port_text.data(), port_text.data() + port_text.size(), value);
    if (port_text.empty() || error != std::errc{} || end != port_text.data() + port_text.size() || value == 0 ||
        value > 65535) {
      return bad_url("The URL's port \"" + std::string(port_text) + "\" is not a number from 1 to 65535.");
    }
    url.port = static_cast<std::uint16_t>(value);
  }

  if (!is_clean_target(target)) return bad_url("The URL's path has a space or a control character.");
  if (target.empty()) {
    url.target = "/";
  } else if (target.starts_with('?')) {
    url.target = "/" + std::string(target);
  } else {
    url.target = std::string(target);
  }
  return url;
}

std::string Url::to_string() const {
  bool ipv6 = host.find(':') != std::string::npos;
  std::string text = scheme + "://";
  text += ipv6 ? "[" + host + "]" : host;
  text += ":" + std::to_string(port) + target;
  return text;
}

bool is_loopback_host(std::string_view host) {
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  if (lowercase(host) == "localhost") return true;
  boost::system::error_code error;
  auto address = boost::asio::ip::make_address(std::string(host), error);
  if (error) return false;
  if (address.is_v6() && address.to_v6().is_v4_mapped()) {
    return boost::asio::ip::make_address_v4(boost::asio::ip::v4_mapped, address.to_v6()).is_loopback();
  }
  return address.is_loopback();
}

}  // namespace deskd::model
