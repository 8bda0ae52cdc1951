#pragma once
// Internal to runner/web: what one HTTP request of the web page is answered with, apart
// from the connection that carries it (web_connection.cpp): who asks (the Unix socket's
// peer, the TCP login), the CSRF checks of a POST, the built-in assets, the login exchange
// and the headers every reply carries (docs/WEB.md). Pure functions of the request, so that
// unit tests call them without a socket.

#include <boost/beast/http.hpp>

#include <optional>
#include <string>
#include <string_view>

#include "runner/control/control_dispatch.h"
#include "runner/web/web_login.h"

namespace deskd::web {

namespace http = boost::beast::http;
using WebRequest = http::request<http::string_body>;
using WebResponse = http::response<http::string_body>;

/// The request line and headers may take this many bytes (past it: 431).
inline constexpr std::size_t kMaximumHeaderBytes = std::size_t{16} << 10;
/// A request body may take this many bytes (past it: 413).
inline constexpr std::size_t kMaximumBodyBytes = std::size_t{1} << 20;

inline constexpr std::string_view kContentSecurityPolicy =
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
    "frame-ancestors 'none'; base-uri 'none'; form-action 'self'";
inline constexpr std::string_view kSessionCookie = "deskd_session";
inline constexpr std::string_view kCsrfHeader = "X-Deskd-Csrf";

/// Which listener a request came in on.
struct WebListener {
  bool tcp = false;  ///< false: the Unix socket, whose peer was checked at accept
  bool tls = false;
};

/// Who makes a request, once let in.
struct WebIdentity {
  control::ControlCaller caller;
  std::string csrf;     ///< what its POSTs must carry; "" for a bearer-token request
  bool bearer = false;  ///< came with the token: no browser sends that by itself, so no CSRF check
};

/// The headers every reply carries (docs/WEB.md); with `no_store`, Cache-Control: no-store.
template <class Fields>
void add_security_headers(Fields& fields, bool no_store) {
  fields.set("Content-Security-Policy", kContentSecurityPolicy);
  fields.set("X-Content-Type-Options", "nosniff");
  fields.set("Referrer-Policy", "no-referrer");
  if (no_store) fields.set(http::field::cache_control, "no-store");
}

/// A reply with `body` (text/plain unless told), the request's version and keep-alive, and
/// the security headers; no-store for everything but the assets.
WebResponse make_reply(const WebRequest& request, http::status status, std::string body,
                       std::string_view content_type = "text/plain; charset=utf-8");
/// An error reply for a request that could not be read (no request to echo); closes.
WebResponse make_error_reply(http::status status, std::string body);

/// The request's path without its query; the value of the query parameter `name`.
std::string_view request_path(std::string_view target);
std::optional<std::string> query_parameter(std::string_view target, std::string_view name);
/// The value of cookie `name` in the request's Cookie headers.
std::optional<std::string> cookie_value(const WebRequest& request, std::string_view name);

/// Who a TCP request comes from: the token as `Authorization: Bearer`, or a live session's
/// cookie. nullopt: nobody (401). `operator_caller` is deskd's own uid, which every login is.
std::optional<WebIdentity> identify_tcp(const WebRequest& request, WebLogins& logins,
                                        const control::ControlCaller& operator_caller);

/// Why a POST must be refused (403), or "" when it may go on: its Content-Type is not
/// application/json, its Origin is not `own_origin`, Sec-Fetch-Site says cross-site, or (but
/// for a bearer-token request) X-Deskd-Csrf is not the identity's csrf.
std::string csrf_refusal(const WebRequest& request, const WebIdentity& identity, std::string_view own_origin);

/// Whether `host` (a Host header, with or without its port) names this machine's loopback:
/// localhost, a name under .localhost, 127.0.0.0/8 or [::1]. The Unix socket answers only
/// those (or no Host at all): a page that rebinds its own DNS name to a port the socket is
/// forwarded to would otherwise be same-origin to the browser, and the socket has no login.
bool is_loopback_host(std::string_view host);

/// "http://" or "https://" and the request's Host: the origin a same-site page sends.
std::string own_origin(const WebRequest& request, const WebListener& listener);

/// GET / and GET /assets/<name>: the built-in asset, gzip when accepted, 304 on a matching
/// If-None-Match, 404 when there is none.
WebResponse asset_reply(const WebRequest& request, std::string_view name);

/// GET /login?token=CODE: a session cookie and a redirect to / for an unused login code,
/// 401 otherwise. The code is in no reply and no log.
WebResponse login_reply(const WebRequest& request, WebLogins& logins, const WebListener& listener);

}  // namespace deskd::web
