#pragma once
// Internal to runner/web: what the web server's listeners and connections share, and one
// connection's life (web_connection.cpp). Not for use outside runner/web.

#include <boost/asio.hpp>
#include <boost/asio/ssl.hpp>

#include <sys/types.h>

#include <list>
#include <memory>
#include <optional>
#include <string>

#include "base/task_group.h"
#include "runner/control/control_dispatch.h"
#include "runner/control/log_limiter.h"
#include "runner/web/web_http.h"
#include "runner/web/web_server.h"

namespace deskd::web {

/// One connection, as the server closes it.
class WebConnectionBase {
 public:
  virtual ~WebConnectionBase() = default;
  /// Closes the socket and ends its event stream, if any.
  virtual void close() = 0;
  virtual bool closed() const = 0;
};

struct WebServer::State {
  State(boost::asio::any_io_executor executor_, WebServerSettings settings_, control::ControlService& service_,
        std::shared_ptr<WebLogins> logins_);

  boost::asio::any_io_executor executor;
  WebServerSettings settings;
  control::ControlService& service;
  std::shared_ptr<WebLogins> logins;
  boost::asio::local::stream_protocol::acceptor unix_acceptor;
  boost::asio::ip::tcp::acceptor tcp_acceptor;
  std::optional<boost::asio::ssl::context> tls;  ///< set when TCP speaks TLS
  /// Who a TCP login is: deskd's own uid, the operator.
  control::ControlCaller operator_caller;
  /// The Unix socket's CSRF value: its peers were checked at accept, one value serves them all.
  std::string unix_csrf;
  /// Warnings, a few a second of each kind: a client that sends thousands of bad requests
  /// does not flood the log.
  control::RateLimitedLog log;
  /// Each open connection and its peer's uid (none: a TCP client, all of whom share one
  /// peer's part of max_clients, since who they are is known only after a login).
  struct Served {
    std::weak_ptr<WebConnectionBase> connection;
    std::optional<uid_t> uid;
  };
  std::list<Served> connections;
  TaskGroup accepting;
  TaskGroup serving;
  bool closed = false;
  bool socket_created = false;

  std::size_t live_connections();
  std::size_t connections_of(std::optional<uid_t> uid);
  /// Logs `text` (never a secret) under the kind `key`, rate-limited.
  void warn(std::string_view key, const std::string& text);
};

/// Serves one Unix-socket connection whose peer is `caller` (already checked).
void start_unix_connection(const std::shared_ptr<WebServer::State>& state,
                           boost::asio::local::stream_protocol::socket socket, control::ControlCaller caller, uid_t uid);
/// Serves one TCP connection (over TLS when the server has a TLS context).
void start_tcp_connection(const std::shared_ptr<WebServer::State>& state, boost::asio::ip::tcp::socket socket);
}  // namespace deskd::web
