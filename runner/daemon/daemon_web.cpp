#include "runner/daemon/daemon_web.h"

#include "runner/daemon/daemon.h"
#include "runner/web/web_login.h"

namespace deskd::app {

Result<std::unique_ptr<web::WebServer>> open_daemon_web(boost::asio::any_io_executor executor,
                                                        const RunnerConfig& runner, Daemon& daemon, const Clock& clock,
                                                        DaemonWebParts parts) {
  const bool tcp = !runner.web_listen_host.empty();
  if (runner.web_socket_path.empty() && !tcp) return std::unique_ptr<web::WebServer>();
  // The token is the TCP listener's: made (or kept) only when there is one.
  std::string token;
  if (tcp) {
    DESKD_ASSIGN_OR_RETURN(token, web::load_or_make_token(runner.state_folder / "web.token"));
  }
  web::WebServerSettings settings{
      .socket_path = runner.web_socket_path,
      .group = parts.group,
      .policy = std::move(parts.policy),
      .listen_host = tcp ? std::optional<std::string>(runner.web_listen_host) : std::nullopt,
      .listen_port = runner.web_listen_port,
      .tls_certificate = runner.web_tls_cert,
      .tls_key = runner.web_tls_key,
      .version = std::move(parts.version),
      .metrics = std::move(parts.metrics),
      .warn = std::move(parts.warn),
      .max_clients = runner.max_clients};
  auto logins = std::make_shared<web::WebLogins>(std::move(token), clock);
  DESKD_ASSIGN_OR_RETURN(auto server, web::WebServer::open(executor, std::move(settings), daemon, std::move(logins)));
  daemon.attach_web(server.get());
  return server;
}

Result<control::WebLoginLink> Daemon::web_url() {
  if (web_server_ == nullptr) {
    return Error::make(ErrorCode::refused, "deskd serves no web page ([runner] web_listen is not set).");
  }
  return web_server_->login_link();
}

}  // namespace deskd::app
