#include "runner/web/web_server.h"

#include <unistd.h>

#include <boost/beast/http.hpp>

#include <algorithm>

#include "base/asio_await.h"
#include "base/exception_text.h"
#include "runner/control/control_server.h"
#include "runner/control/unix_listener.h"
#include "runner/web/web_server_state.h"

namespace deskd::web {

namespace asio = boost::asio;
using asio::ip::tcp;
using asio::local::stream_protocol;

namespace {

// How long the accept loops wait when deskd is out of descriptors.
constexpr std::chrono::milliseconds kWebAcceptBackoff{100};

void report_web_escape(WebServer::State& state, std::exception_ptr escaped) {
  if (escaped) state.warn("web connection failed", "web: a connection failed: " + describe_exception(escaped));
}

// Answers a Unix-socket connection that gets no place, then closes it. Detached: it catches
// nothing because nothing in it throws (every wait gives its error as a value).
asio::awaitable<void> turn_away_unix(stream_protocol::socket socket, http::status status, std::string why) {
  WebResponse response = make_error_reply(status, std::move(why));
  asio::steady_timer deadline(socket.get_executor(), std::chrono::seconds(2));
  deadline.async_wait([&socket](const boost::system::error_code& error) {
    boost::system::error_code ignored;
    if (!error) socket.close(ignored);
  });
  (void)co_await http::async_write(socket, response, kAwait);
  deadline.cancel();
  boost::system::error_code ignored;
  socket.close(ignored);
}

Result<void> load_tls(asio::ssl::context& context, const WebServerSettings& settings) {
  boost::system::error_code error;
  context.set_options(asio::ssl::context::default_workarounds | asio::ssl::context::no_sslv2 |
                          asio::ssl::context::no_sslv3 | asio::ssl::context::no_tlsv1 | asio::ssl::context::no_tlsv1_1 |
                          asio::ssl::context::single_dh_use,
                      error);
  context.use_certificate_chain_file(settings.tls_certificate.native(), error);
  if (error) {
    return Error::make(ErrorCode::invalid_argument, "The web certificate " + settings.tls_certificate.native() +
                                                        " cannot be used: " + error.message() + ".");
  }
  context.use_private_key_file(settings.tls_key.native(), asio::ssl::context::pem, error);
  if (error) {
    return Error::make(ErrorCode::invalid_argument,
                       "The web key " + settings.tls_key.native() + " cannot be used: " + error.message() + ".");
  }
  return success();
}

asio::awaitable<void> accept_unix(std::shared_ptr<WebServer::State> state) {
  asio::steady_timer backoff(state->executor);
  while (!state->closed) {
    auto [error, socket] = co_await state->unix_acceptor.async_accept(kAwait);
    if (error) {
      if (state->closed || error == asio::error::operation_aborted) break;
      state->warn("web accept failed", "web: accepting a connection failed: " + error.message());
      backoff.expires_after(kWebAcceptBackoff);
      co_await backoff.async_wait(kAwait);
      continue;
    }
    auto peer = control::peer_credentials(socket.native_handle());
    if (!peer.ok() || !state->settings.policy.allows(*peer)) {
      const std::string who = peer.ok() ? control::PeerPolicy::describe(*peer) : std::string("an unknown peer");
      state->warn("web refused peer", "web: refused a connection from " + who);
      // Detached: turn_away_unix cannot throw.
      asio::co_spawn(
          state->executor,
          turn_away_unix(std::move(socket), http::status::forbidden, who + " is not allowed to use this deskd."),
          asio::detached);
      continue;
    }
    // The control socket's rule: a share per uid, and places kept for root and deskd's own.
    const std::string who = control::PeerPolicy::describe(*peer);
    const bool privileged = state->settings.policy.is_privileged(*peer);
    const std::size_t live = state->live_connections();
    if (const std::string refusal = control::client_refusal(live, state->connections_of(peer->uid), privileged,
                                                            state->settings.max_clients, who, "web clients");
        !refusal.empty()) {
      state->warn("web too many clients", "web: refused a connection from " + who + ": " + refusal);
      asio::co_spawn(state->executor, turn_away_unix(std::move(socket), http::status::service_unavailable, refusal),
                     asio::detached);
      continue;
    }
    start_unix_connection(state, std::move(socket), control::ControlCaller{who, privileged}, peer->uid);
  }
}

asio::awaitable<void> accept_tcp(std::shared_ptr<WebServer::State> state) {
  asio::steady_timer backoff(state->executor);
  while (!state->closed) {
    auto [error, socket] = co_await state->tcp_acceptor.async_accept(kAwait);
    if (error) {
      if (state->closed || error == asio::error::operation_aborted) break;
      state->warn("web accept failed", "web: accepting a connection failed: " + error.message());
      backoff.expires_after(kWebAcceptBackoff);
      co_await backoff.async_wait(kAwait);
      continue;
    }
    // No place: closed at once (a TLS client could not read a plain answer anyway). Any
    // local user can reach a loopback port, so TCP clients together get one peer's share:
    // they cannot take the places of the Unix socket's users.
    const std::size_t live = state->live_connections();
    if (const std::string refusal =
            control::client_refusal(live, state->connections_of(std::nullopt), false, state->settings.max_clients,
                                    "TCP (its clients together)", "web clients");
        !refusal.empty()) {
      state->warn("web too many clients", "web: refused a TCP connection: " + refusal);
      continue;
    }
    start_tcp_connection(state, std::move(socket));
  }
}

}  // namespace

WebServer::State::State(asio::any_io_executor executor_, WebServerSettings settings_, control::ControlService& service_,
                        std::shared_ptr<WebLogins> logins_)
    : executor(executor_),
      settings(std::move(settings_)),
      service(service_),
      logins(std::move(logins_)),
      unix_acceptor(executor_),
      tcp_acceptor(executor_),
      operator_caller{control::PeerPolicy::describe(control::PeerCredentials{0, ::geteuid(), ::getegid()}), true},
      log(executor_, settings.warn),
      accepting(executor_, [this](std::exception_ptr escaped) { report_web_escape(*this, escaped); }),
      serving(executor_, [this](std::exception_ptr escaped) { report_web_escape(*this, escaped); }) {}

std::size_t WebServer::State::live_connections() {
  connections.remove_if([](const Served& served) {
    const auto connection = served.connection.lock();
    return !connection || connection->closed();
  });
  return connections.size();
}

std::size_t WebServer::State::connections_of(std::optional<uid_t> uid) {
  live_connections();
  return static_cast<std::size_t>(
      std::count_if(connections.begin(), connections.end(), [&](const Served& served) { return served.uid == uid; }));
}

void WebServer::State::warn(std::string_view key, const std::string& text) { log.warn(key, text); }

Result<std::unique_ptr<WebServer>> WebServer::open(asio::any_io_executor executor, WebServerSettings settings,
                                                   control::ControlService& service,
                                                   std::shared_ptr<WebLogins> logins) {
  auto state = std::make_shared<State>(executor, std::move(settings), service, std::move(logins));
  auto csrf = secret_hex(32);
  if (!csrf.ok()) return std::move(csrf).error();
  state->unix_csrf = *csrf;
  const WebServerSettings& wanted = state->settings;
  if (wanted.listen_host) {
    if (!wanted.tls_certificate.empty()) {
      state->tls.emplace(asio::ssl::context::tls_server);
      DESKD_RETURN_IF_ERROR(load_tls(*state->tls, wanted));
    }
    boost::system::error_code error;
    const auto address = asio::ip::make_address(*wanted.listen_host, error);
    if (error)
      return Error::make(ErrorCode::invalid_argument,
                         "web_listen: '" + *wanted.listen_host + "' is not an IP address.");
    const tcp::endpoint endpoint(address, wanted.listen_port);
    state->tcp_acceptor.open(endpoint.protocol(), error);
    if (!error) state->tcp_acceptor.set_option(asio::socket_base::reuse_address(true), error);
    if (!error) state->tcp_acceptor.bind(endpoint, error);
    if (!error) state->tcp_acceptor.listen(asio::socket_base::max_listen_connections, error);
    if (error) {
      return Error::make(ErrorCode::system, "The web page cannot listen on " + *wanted.listen_host + ":" +
                                                std::to_string(wanted.listen_port) + ": " + error.message() + ".");
    }
  }
  if (!wanted.socket_path.empty()) {
    DESKD_RETURN_IF_ERROR(control::open_unix_listener(state->unix_acceptor, wanted.socket_path, wanted.group));
    state->socket_created = true;
  }
  return std::unique_ptr<WebServer>(new WebServer(state));
}

WebServer::~WebServer() {
  close();
  if (state_->socket_created) ::unlink(state_->settings.socket_path.c_str());
}

asio::awaitable<void> WebServer::run() {
  auto state = state_;
  if (state->unix_acceptor.is_open()) state->accepting.spawn(accept_unix(state));
  if (state->tcp_acceptor.is_open()) state->accepting.spawn(accept_tcp(state));
  co_await state->accepting.async_wait();
}

void WebServer::close() {
  state_->closed = true;
  boost::system::error_code ignored;
  state_->unix_acceptor.close(ignored);
  state_->tcp_acceptor.close(ignored);
  for (auto& served : state_->connections) {
    if (auto connection = served.connection.lock()) connection->close();
  }
  state_->connections.clear();
  state_->log.flush();
}

std::string WebServer::tcp_origin() const {
  if (!state_->tcp_acceptor.is_open()) return "";
  boost::system::error_code error;
  const tcp::endpoint bound = state_->tcp_acceptor.local_endpoint(error);
  if (error) return "";
  const std::string host =
      bound.address().is_v6() ? "[" + bound.address().to_string() + "]" : bound.address().to_string();
  return std::string(state_->tls ? "https://" : "http://") + host + ":" + std::to_string(bound.port());
}

Result<control::WebLoginLink> WebServer::login_link() {
  const std::string origin = tcp_origin();
  if (origin.empty()) {
    return Error::make(ErrorCode::refused,
                       "deskd serves its web page on no TCP address ([runner] web_listen); a login link is for that.");
  }
  DESKD_ASSIGN_OR_RETURN(std::string code, state_->logins->mint_login_code());
  return control::WebLoginLink{origin + "/login?token=" + code, kLoginCodeLifetime.count()};
}

std::size_t WebServer::connection_count() const { return state_->live_connections(); }

}  // namespace deskd::web
