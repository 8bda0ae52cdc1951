#include "runner/web/web_http.h"

#include <algorithm>
#include <cctype>

#include "base/ascii_text.h"
#include "runner/web/web_assets.h"

namespace deskd::web {

namespace {

// Whether the header value lists `token` among its comma-separated items (case-blind),
// without q=0.
bool lists_token(std::string_view value, std::string_view token) {
  while (!value.empty()) {
    const std::size_t comma = value.find(',');
    std::string_view item = value.substr(0, comma);
    value = comma == std::string_view::npos ? std::string_view() : value.substr(comma + 1);
    const std::size_t semicolon = item.find(';');
    std::string_view name = item.substr(0, semicolon);
    std::string_view parameters = semicolon == std::string_view::npos ? std::string_view() : item.substr(semicolon + 1);
    while (!name.empty() && name.front() == ' ') name.remove_prefix(1);
    while (!name.empty() && name.back() == ' ') name.remove_suffix(1);
    if (!equals_ignoring_case(name, token)) continue;
    std::string compact;
    for (char c : parameters) {
      if (c != ' ') compact += c;
    }
    if (compact == "q=0" || compact == "q=0.0" || compact == "q=0.00" || compact == "q=0.000") return false;
    return true;
  }
  return false;
}

std::string_view request_header_value(const WebRequest& request, std::string_view name) {
  const auto found = request.find(name);
  return found == request.end() ? std::string_view() : std::string_view(found->value().data(), found->value().size());
}

}  // namespace

WebResponse make_reply(const WebRequest& request, http::status status, std::string body,
                       std::string_view content_type) {
  WebResponse response{status, request.version()};
  response.set(http::field::content_type, content_type);
  add_security_headers(response, true);
  response.keep_alive(request.keep_alive());
  response.body() = std::move(body);
  response.prepare_payload();
  return response;
}

WebResponse make_error_reply(http::status status, std::string body) {
  WebResponse response{status, 11};
  response.set(http::field::content_type, "text/plain; charset=utf-8");
  add_security_headers(response, true);
  response.keep_alive(false);
  response.body() = std::move(body) + "\n";
  response.prepare_payload();
  return response;
}

std::string_view request_path(std::string_view target) { return target.substr(0, target.find('?')); }

std::optional<std::string> query_parameter(std::string_view target, std::string_view name) {
  const std::size_t question = target.find('?');
  if (question == std::string_view::npos) return std::nullopt;
  std::string_view query = target.substr(question + 1);
  while (!query.empty()) {
    const std::size_t amp = query.find('&');
    const std::string_view pair = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view() : query.substr(amp + 1);
    const std::size_t equals = pair.find('=');
    if (pair.substr(0, equals) != name) continue;
    const std::string_view raw = equals == std::string_view::npos ? std::string_view() : pair.substr(equals + 1);
    // Percent-decoded: desk names are [A-Za-z0-9_-], codes hex, but a page may encode them.
    std::string value;
    for (std::size_t at = 0; at < raw.size(); ++at) {
      if (raw[at] == '+') {
        value += ' ';
      } else if (raw[at] == '%' && at + 2 < raw.size() && std::isxdigit(static_cast<unsigned char>(raw[at + 1])) &&
                 std::isxdigit(static_cast<unsigned char>(raw[at + 2]))) {
        value += static_cast<char>(std::stoi(std::string(raw.substr(at + 1, 2)), nullptr, 16));
        at += 2;
      } else {
        value += raw[at];
      }
    }
    return value;
  }
  return std::nullopt;
}

std::optional<std::string> cookie_value(const WebRequest& request, std::string_view name) {
  const auto [first, last] = request.equal_range(http::field::cookie);
  for (auto field_at = first; field_at != last; ++field_at) {
    const auto& field = *field_at;
    std::string_view cookies(field.value().data(), field.value().size());
    while (!cookies.empty()) {
      const std::size_t semicolon = cookies.find(';');
      std::string_view pair = cookies.substr(0, semicolon);
      cookies = semicolon == std::string_view::npos ? std::string_view() : cookies.substr(semicolon + 1);
      while (!pair.empty() && pair.front() == ' ') pair.remove_prefix(1);
      const std::size_t equals = pair.find('=');
      if (equals != std::string_view::npos && pair.substr(0, equals) == name)
        return std::string(pair.substr(equals + 1));
    }
  }
  return std::nullopt;
}

std::optional<WebIdentity> identify_tcp(const WebRequest& request, WebLogins& logins,
                                        const control::ControlCaller& operator_caller) {
  const std::string_view authorization = request_header_value(request, "Authorization");
  constexpr std::string_view kBearer = "Bearer ";
  if (!authorization.empty()) {
    // A wrong token is refused even when a good cookie comes with it: the client meant the token.
    if (authorization.size() <= kBearer.size() ||
        !equals_ignoring_case(authorization.substr(0, kBearer.size()), kBearer)) {
      return std::nullopt;
    }
    std::string_view token = authorization.substr(kBearer.size());
    while (!token.empty() && token.back() == ' ') token.remove_suffix(1);
    if (!logins.is_token(token)) return std::nullopt;
    return WebIdentity{operator_caller, "", true};
  }
  const auto cookie = cookie_value(request, kSessionCookie);
  if (!cookie) return std::nullopt;
  const WebSession* session = logins.find_session(*cookie);
  if (session == nullptr) return std::nullopt;
  return WebIdentity{operator_caller, session->csrf, false};
}

bool is_loopback_host(std::string_view host) {
  if (host.starts_with('[')) return host == "[::1]" || host.starts_with("[::1]:");
  host = host.substr(0, host.find(':'));
  if (equals_ignoring_case(host, "localhost")) return true;
  if (host.size() > 10 && equals_ignoring_case(host.substr(host.size() - 10), ".localhost")) return true;
  // 127.0.0.0/8 as a dotted quad of digits only.
  if (!host.starts_with("127.")) return false;
  int dots = 0;
  for (const char c : host) {
    if (c == '.') {
      ++dots;
    } else if (c < '0' || c > '9') {
      return false;
    }
  }
  return dots == 3;
}

std::string own_origin(const WebRequest& request, const WebListener& listener) {
  return std::string(listener.tls ? "https://" : "http://") + std::string(request_header_value(request, "Host"));
}

std::string csrf_refusal(const WebRequest& request, const WebIdentity& identity, std::string_view origin) {
  std::string_view type = request_header_value(request, "Content-Type");
  type = type.substr(0, type.find(';'));
  while (!type.empty() && type.back() == ' ') type.remove_suffix(1);
  if (!equals_ignoring_case(type, "application/json")) return "A POST must carry Content-Type: application/json.";
  if (equals_ignoring_case(request_header_value(request, "Sec-Fetch-Site"), "cross-site")) {
    return "A cross-site request is refused.";
  }
  if (request.find("Origin") != request.end() && request_header_value(request, "Origin") != origin) {
    return "A request from another origin is refused.";
  }
  if (identity.bearer) return "";
  const std::string_view presented = request_header_value(request, kCsrfHeader);
  if (identity.csrf.empty() || !same_secret(presented, identity.csrf)) {
    return "A POST must carry the session's X-Deskd-Csrf (from GET /api/session).";
  }
  return "";
}

WebResponse asset_reply(const WebRequest& request, std::string_view name) {
  const WebAsset* asset = find_web_asset(name);
  if (asset == nullptr) return make_reply(request, http::status::not_found, "There is no such page.\n");
  WebResponse response{http::status::ok, request.version()};
  add_security_headers(response, false);
  response.set(http::field::cache_control, "no-cache");
  response.set(http::field::etag, asset->etag);
  response.set(http::field::vary, "Accept-Encoding");
  response.keep_alive(request.keep_alive());
  const std::string_view match = request_header_value(request, "If-None-Match");
  if (!match.empty() && match.find(asset->etag) != std::string_view::npos) {
    response.result(http::status::not_modified);
    return response;
  }
  response.set(http::field::content_type, asset->content_type);
  std::span<const unsigned char> bytes = asset->plain;
  if (lists_token(request_header_value(request, "Accept-Encoding"), "gzip")) {
    response.set(http::field::content_encoding, "gzip");
    bytes = asset->gzip;
  }
  response.body().assign(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  response.prepare_payload();
  return response;
}

WebResponse login_reply(const WebRequest& request, WebLogins& logins, const WebListener& listener) {
  const auto code = query_parameter(request.target(), "token");
  const auto session = code ? logins.redeem_login_code(*code) : std::nullopt;
  if (!session) {
    return make_reply(request, http::status::unauthorized,
                      "This login link is wrong, used or expired; ask for a new one with deskctl web-url.\n");
  }
  WebResponse response = make_reply(request, http::status::see_other, "");
  response.set(http::field::location, "/");
  std::string cookie = std::string(kSessionCookie) + "=" + session->id + "; HttpOnly; SameSite=Strict; Path=/";
  if (listener.tls) cookie += "; Secure";
  response.set(http::field::set_cookie, cookie);
  return response;
}

const WebAsset* find_web_asset(std::string_view name) {
  const auto assets = web_assets();
  const auto found =
      std::find_if(assets.begin(), assets.end(), [&](const WebAsset& asset) { return asset.name == name; });
  return found == assets.end() ? nullptr : &*found;
}

}  // namespace deskd::web
