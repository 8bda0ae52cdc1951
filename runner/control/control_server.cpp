#include "runner/control/control_server.h"

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <boost/asio.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/json.hpp>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <list>
#include <thread>

#include "base/asio_await.h"
#include "base/task_group.h"
#include "runner/control/control_connection.h"
#include "runner/control/control_service.h"
#include "runner/control/unix_listener.h"
#include "runner/control_protocol/control_protocol.h"

namespace deskd::control {

namespace asio = boost::asio;
namespace json = boost::json;
using asio::local::stream_protocol;
using namespace asio::experimental::awaitable_operators;

namespace {

// Whether an accept failed for want of descriptors or memory: waiting helps, retrying at
// once only spins (the pending connection keeps the socket readable).
bool out_of_resources(const boost::system::error_code& error) {
  const int number = error.value();
  return error.category() == boost::system::system_category() &&
         (number == EMFILE || number == ENFILE || number == ENOBUFS || number == ENOMEM);
}

}  // namespace

std::size_t max_clients_per_uid(std::size_t max_clients) { return std::max<std::size_t>(max_clients / 4, 4); }

std::string client_refusal(std::size_t live, std::size_t held_by_peer, bool privileged, std::size_t max_clients,
                           const std::string& who, std::string_view clients) {
  const std::string counted(clients);
  if (privileged) {
    if (live < max_clients + kReservedPrivilegedClients) return "";
    return "deskd already serves " + std::to_string(live) + " " + counted + ": its limit of " +
           std::to_string(max_clients) + " ([runner] max_clients) and the " +
           std::to_string(kReservedPrivilegedClients) +
           " places kept for root and deskd's own user are taken; try again once one has gone.";
  }
  // A user past its own share hears that first: waiting for others would not help it.
  const std::size_t share = max_clients_per_uid(max_clients);
  if (held_by_peer >= share) {
    return who + " already has " + std::to_string(share) + " connections to deskd, the most one user may hold (a "
           "quarter of [runner] max_clients); close one first.";
  }
  if (live >= max_clients) {
    return "deskd already serves " + std::to_string(live) + " " + counted +
           ", its limit ([runner] max_clients); try again once one has gone.";
  }
  return "";
}

struct ControlServer::State {
  State(asio::any_io_executor executor, ControlServerSettings settings_, ControlService& service)
      : acceptor(executor),
        backoff(executor),
        settings(std::move(settings_)),
        context(std::make_shared<ConnectionContext>(executor, service, settings.client_buffer_bytes, settings.warn,
                                                    settings.request_deadline)),
        serving(executor, [context = context](std::exception_ptr escaped) { report_escape(escaped, *context); }) {}
  stream_protocol::acceptor acceptor;
  asio::steady_timer backoff;
  ControlServerSettings settings;
  std::shared_ptr<ConnectionContext> context;
  struct Served {
    std::weak_ptr<Connection> connection;
    uid_t uid;
  };
  std::list<Served> connections;  // for the limits; `serving` runs them
  // Each served connection from its first read to its close; stop() waits for them all.
  TaskGroup serving;
  bool closed = false;
  bool socket_created = false;

  std::size_t live_connections() {
    connections.remove_if([](const Served& served) {
      const auto connection = served.connection.lock();
      return !connection || connection->closed();
    });
    return connections.size();
  }

  std::size_t connections_of(uid_t uid) {
    live_connections();
    return static_cast<std::size_t>(
        std::count_if(connections.begin(), connections.end(), [uid](const Served& served) { return served.uid == uid; }));
  }

  // Why `peer` gets no place now ("" when it gets one): past max_clients (root and deskd's
  // own uid: past the slots kept for them too), or past its uid's share.
  std::string refusal_for(const PeerCredentials& peer, const std::string& who) {
    const std::size_t live = live_connections();
    return client_refusal(live, connections_of(peer.uid), settings.policy.is_privileged(peer), settings.max_clients,
                          who);
  }

  // Answers a connection that will not be served with one error line, then closes it.
  void turn_away(const std::shared_ptr<Connection>& connection, std::string_view code, const std::string& message) {
    connection->send(reply_error(nullptr, code, message));
    connection->finish_then_close();
  }
};

Result<std::unique_ptr<ControlServer>> ControlServer::open(asio::any_io_executor executor,
                                                          ControlServerSettings settings, ControlService& service) {
  auto state = std::make_shared<State>(executor, std::move(settings), service);
  DESKD_RETURN_IF_ERROR(open_unix_listener(state->acceptor, state->settings.socket_path, state->settings.group));
  state->socket_created = true;
  auto server = std::unique_ptr<ControlServer>(new ControlServer(state));
  return server;
}

ControlServer::~ControlServer() {
  close();
  if (state_->socket_created) ::unlink(state_->settings.socket_path.c_str());
}

asio::awaitable<void> ControlServer::run() {
  auto state = state_;
  ConnectionContext& context = *state->context;
  // While deskd is out of descriptors: since when, and how many waits it took.
  std::optional<std::chrono::steady_clock::time_point> starved_since;
  std::size_t starved_waits = 0;
  while (!state->closed) {
    auto [error, socket] = co_await state->acceptor.async_accept(kAwait);
    if (error) {
      if (state->closed || error == asio::error::operation_aborted) break;
      if (out_of_resources(error)) {
        if (!starved_since) {
          starved_since = std::chrono::steady_clock::now();
          starved_waits = 0;
          context.log.warn("accept failed", "accepting a control connection failed: " + error.message() + " (" +
                                                std::to_string(state->live_connections()) +
                                                " connections open); deskd tries again every " +
                                                std::to_string(kAcceptBackoff.count()) + " ms until it can");
        }
        ++starved_waits;
        state->backoff.expires_after(kAcceptBackoff);
        co_await state->backoff.async_wait(kAwait);
      } else {
        context.log.warn("accept failed", "accepting a control connection failed: " + error.message());
      }
      continue;
    }
    if (starved_since) {
      const auto waited = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - *starved_since);
      context.log.warn("accept failed", "accepting control connections again after " + std::to_string(waited.count()) +
                                            " ms (" + std::to_string(starved_waits) + " waits)");
      starved_since.reset();
    }
    auto connection = std::make_shared<Connection>(std::move(socket), state->context);
    auto peer = peer_credentials(connection->socket().native_handle());
    if (!peer.ok() || !state->settings.policy.allows(*peer)) {
      const std::string who = peer.ok() ? PeerPolicy::describe(*peer) : std::string("an unknown peer");
      context.log.warn("refused peer", "refused a control connection from " + who);
      state->turn_away(connection, code::kNotAllowed, who + " is not allowed to use this deskd.");
      continue;
    }
    const std::string who = PeerPolicy::describe(*peer);
    connection->set_sender(who, state->settings.policy.is_privileged(*peer));
    if (const std::string refusal = state->refusal_for(*peer, who); !refusal.empty()) {
      context.log.warn("too many clients", "refused a control connection from " + who + ": " + refusal);
      state->turn_away(connection, code::kTooManyClients, refusal);
      continue;
    }
    state->connections.push_back({connection, peer->uid});
    state->serving.spawn(Connection::serve_until_closed(connection));
  }
}

void ControlServer::begin_stopping(std::string message) {
  ConnectionContext& context = *state_->context;
  if (context.stopping) return;
  context.stopping = true;
  context.stopping_message = std::move(message);
  for (auto& served : state_->connections) {
    if (auto connection = served.connection.lock()) connection->tell_follows_stopping(context.stopping_message);
  }
}

asio::awaitable<void> ControlServer::stop(std::chrono::milliseconds flush_timeout) {
  auto state = state_;
  if (state->closed) co_return;
  state->closed = true;
  boost::system::error_code ignored;
  state->acceptor.close(ignored);
  state->backoff.cancel();
  const std::string message = "deskd stopped; this follow ends.";
  for (auto& served : state->connections) {
    if (auto connection = served.connection.lock()) connection->end_for_stop(message);
  }
  // Their goodbyes get up to `flush_timeout` to be written; close() ends the rest.
  co_await (state->serving.async_wait() || expire_after(flush_timeout));
  close();
}

void ControlServer::close() {
  state_->closed = true;
  boost::system::error_code ignored;
  state_->acceptor.close(ignored);
  state_->backoff.cancel();
  for (auto& served : state_->connections) {
    if (auto connection = served.connection.lock()) connection->close();
  }
  state_->connections.clear();
  state_->context->log.flush();
}

std::size_t ControlServer::connection_count() const { return state_->live_connections(); }

}  // namespace deskd::control
