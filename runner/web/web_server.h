#pragma once
// WebServer: deskd's web page and API (docs/WEB.md) on a Unix socket of its own (the same
// SO_PEERCRED checks as the control socket; the peer is the identity) and, optionally, a
// TCP address where every request needs a login (web_login.h), over TLS with the
// operator's certificate when one is configured. Every API request is a control op,
// answered through the same ControlService and op table as the control socket
// (control_dispatch.h); events stream as Server-Sent Events from the same bus. Requests are
// bounded in bytes (16 KiB of headers, 1 MiB of body) and time (header, body and write
// deadlines, an idle keep-alive timeout), and at most `max_clients` connections are served.

#include <sys/types.h>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "base/result.h"
#include "runner/control/control_values.h"
#include "runner/control/peer_policy.h"
#include "runner/web/web_login.h"

namespace deskd::control {
class ControlService;
}

namespace deskd::web {

struct WebServerSettings {
  std::filesystem::path socket_path;       ///< the Unix socket; empty: none
  std::optional<gid_t> group;              ///< the socket file's group; none: deskd's own
  control::PeerPolicy policy;              ///< who may use the Unix socket
  std::optional<std::string> listen_host;  ///< an IP address; none: no TCP listener
  std::uint16_t listen_port = 0;           ///< 0: any free port (tests)
  std::filesystem::path tls_certificate;   ///< PEM chain; with tls_key, TCP speaks TLS
  std::filesystem::path tls_key;
  std::string version;                   ///< deskd's, for GET /api/session
  std::function<std::string()> metrics;  ///< GET /metrics's text; empty: 404
  /// Told about refused peers and bad requests, never a secret; may be empty.
  std::function<void(const std::string&)> warn;
  std::size_t max_clients = 256;
  std::chrono::milliseconds header_deadline{10000};  ///< to send the request line and headers (and TLS handshake)
  std::chrono::milliseconds body_deadline{10000};    ///< to send the body
  std::chrono::milliseconds idle_timeout{60000};     ///< a kept-alive connection waiting for its next request
  std::chrono::milliseconds write_deadline{30000};   ///< for one reply or event to be taken
};

class WebServer {
 public:
  /// Binds the listeners; refuses a Unix socket another deskd answers on, an address that
  /// cannot be bound, and certificate or key files OpenSSL cannot use.
  static Result<std::unique_ptr<WebServer>> open(boost::asio::any_io_executor executor, WebServerSettings settings,
                                                 control::ControlService& service, std::shared_ptr<WebLogins> logins);
  ~WebServer();  ///< Closes, and removes the socket file.

  /// Accepts connections on every listener until close().
  boost::asio::awaitable<void> run();
  /// Stops accepting and ends every connection (event streams too).
  void close();

  /// "http[s]://HOST:PORT" of the TCP listener as bound (its real port); "" without one.
  std::string tcp_origin() const;
  /// A one-time login link for the TCP listener (the web_url op); refused without one.
  Result<control::WebLoginLink> login_link();
  /// How many connections are open.
  std::size_t connection_count() const;

  struct State;

 private:
  explicit WebServer(std::shared_ptr<State> state) : state_(std::move(state)) {}
  std::shared_ptr<State> state_;
};

}  // namespace deskd::web
