#include "runner/control/control_server.h"

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <boost/asio.hpp>
#include <boost/json.hpp>

#include <cerrno>
#include <cstdio>
#include <limits>
#include <list>
#include <map>

#include "runner/control/control_protocol.h"
#include "runner/control/control_service.h"
#include "runner/control/event_history.h"

namespace deskd::control {

namespace asio = boost::asio;
namespace json = boost::json;
using asio::local::stream_protocol;

namespace {

constexpr auto kAwait = asio::as_tuple(asio::use_awaitable);
// Past this much unwritten output, a connection's event streams wait for the client and
// their subscriptions drop the oldest events instead.
constexpr std::size_t kMaximumPendingBytes = std::size_t{4} << 20;
constexpr std::size_t kReadChunkBytes = 64 * 1024;

void report_escape(std::exception_ptr escaped, const std::function<void(const std::string&)>& warn) {
  if (!escaped) return;
  try {
    std::rethrow_exception(escaped);
  } catch (const std::exception& error) {
    if (warn) warn(std::string("control connection: ") + error.what());
  }
}

// The reply code for a service error.
std::string_view code_for(const Error& error) {
  switch (error.code) {
    case ErrorCode::not_found: return code::kNotFound;
    case ErrorCode::refused: return code::kRefused;
    case ErrorCode::invalid_argument: return code::kBadRequest;
    default: return code::kInternal;
  }
}

}  // namespace

struct Connection : std::enable_shared_from_this<Connection> {
  Connection(stream_protocol::socket socket_, ControlService& service_,
             std::function<void(const std::string&)> warn_)
      : socket(std::move(socket_)), writable(socket.get_executor()), service(service_), warn(std::move(warn_)) {
    writable.expires_at(asio::steady_timer::time_point::max());
  }

  stream_protocol::socket socket;
  asio::steady_timer writable;  // cancelled whenever the queue drains
  ControlService& service;
  std::function<void(const std::string&)> warn;
  std::string sender;
  std::deque<std::string> outgoing;
  std::size_t pending_bytes = 0;
  bool writing = false;
  bool closed = false;
  bool close_after_flush = false;
  std::map<std::string, std::shared_ptr<desk::EventSubscription>> follows;  // by serialized request id

  void send(std::string line) {
    if (closed) return;
    line += '\n';
    pending_bytes += line.size();
    outgoing.push_back(std::move(line));
    if (writing) return;
    writing = true;
    asio::co_spawn(socket.get_executor(), drain(shared_from_this()),
                   [warn_copy = warn](std::exception_ptr escaped) { report_escape(escaped, warn_copy); });
  }

  static asio::awaitable<void> drain(std::shared_ptr<Connection> self) {
    while (!self->outgoing.empty() && !self->closed) {
      auto [error, written] = co_await asio::async_write(self->socket, asio::buffer(self->outgoing.front()), kAwait);
      // close() may have run while the write was in flight: it leaves the line being
      // written alone (the write still refers to it) and the rest is dropped here.
      if (self->closed) break;
      self->pending_bytes -= self->outgoing.front().size();
      self->outgoing.pop_front();
      if (error) self->close();
    }
    self->writing = false;
    if (self->closed) {
      self->outgoing.clear();
      self->pending_bytes = 0;
    }
    self->writable.cancel();
    if (self->close_after_flush) self->close();
  }

  asio::awaitable<void> wait_writable() {
    while (pending_bytes > kMaximumPendingBytes && !closed) {
      co_await writable.async_wait(kAwait);
    }
  }

  void close() {
    if (closed) return;
    closed = true;
    for (auto& [id, subscription] : follows) subscription->close();
    follows.clear();
    boost::system::error_code ignored;
    socket.shutdown(stream_protocol::socket::shutdown_both, ignored);
    socket.close(ignored);
    // A write in flight still refers to the front line; drain() clears the queue once it
    // has ended.
    if (!writing) {
      outgoing.clear();
      pending_bytes = 0;
    }
    writable.cancel();
  }

  static asio::awaitable<void> stream(std::shared_ptr<Connection> self, json::value id,
                                      std::shared_ptr<desk::EventSubscription> subscription, std::string desk_name,
                                      std::uint64_t after) {
    std::uint64_t reported_drops = 0;
    for (;;) {
      std::optional<desk::Event> event = co_await subscription->next();
      if (!event || self->closed) break;
      if (!desk_name.empty() && event->desk != desk_name) continue;
      if (event_number(event->id).value_or(0) <= after) continue;  // already replayed
      if (subscription->dropped() != reported_drops) {
        reported_drops = subscription->dropped();
        self->send(json::serialize(json::object{{"id", id}, {"dropped", reported_drops}}));
      }
      self->send(reply_event(id, desk::to_json(*event)));
      co_await self->wait_writable();
    }
  }

  void follow(const ControlRequest& request) {
    const std::string key = json::serialize(request.id);
    if (follows.contains(key)) {
      send(reply_error(request.id, code::kBadRequest, "A follow with this id is already running on this connection."));
      return;
    }
    std::optional<std::uint64_t> after;
    if (request.from) {
      after = event_number(*request.from);
      if (!after) {
        send(reply_error(request.id, code::kBadRequest, "'from' must be an event id such as e-42."));
        return;
      }
    }
    const std::string desk_name = request.desk.value_or("");
    // Subscribe before replaying, so nothing falls between the two.
    auto subscription = service.subscribe();
    follows[key] = subscription;
    std::uint64_t last = 0;
    bool complete = true;
    std::vector<desk::Event> backlog;
    if (after || request.replay) {
      auto replay = service.replay(desk_name, after, std::numeric_limits<std::size_t>::max());
      complete = replay.complete;
      backlog = std::move(replay.events);
    }
    send(reply_ok(request.id, {{"following", desk_name.empty() ? json::value(nullptr) : json::value(desk_name)},
                               {"replay_complete", complete}}));
    for (const auto& event : backlog) {
      last = std::max(last, event_number(event.id).value_or(0));
      send(reply_event(request.id, desk::to_json(event)));
    }
    // Tells a client that only wanted the kept events where they end.
    send(json::serialize(json::object{{"id", request.id}, {"replayed", backlog.size()}}));
    asio::co_spawn(socket.get_executor(), stream(shared_from_this(), request.id, subscription, desk_name, last),
                   [warn_copy = warn](std::exception_ptr escaped) { report_escape(escaped, warn_copy); });
  }

  void unfollow(const ControlRequest& request) {
    auto found = follows.find(json::serialize(*request.follow));
    if (found == follows.end()) {
      send(reply_error(request.id, code::kNotFound, "No follow with that id runs on this connection."));
      return;
    }
    found->second->close();
    follows.erase(found);
    send(reply_ok(request.id));
  }

  // Answers one request line.
  void handle(std::string_view line) {
    ParsedRequest parsed = parse_control_request(line);
    const ControlRequest& request = parsed.request;
    if (parsed.problem) {
      send(reply_error(request.id, parsed.problem_code, *parsed.problem));
      return;
    }
    if (request.desk && !request.desk->empty() && !service.has_desk(*request.desk)) {
      send(reply_error(request.id, code::kUnknownDesk, "There is no desk '" + *request.desk + "'."));
      return;
    }
    const std::string desk_name = request.desk.value_or("");
    const auto answer = [&](auto result, const char* field) {
      if (result.ok()) {
        send(reply_ok(request.id, {{field, std::move(result).value()}}));
      } else {
        send(reply_error(request.id, code_for(result.error()), result.error().what));
      }
    };
    if (request.op == op::kDesks) {
      send(reply_ok(request.id, {{"desks", service.desks()}}));
    } else if (request.op == op::kStatus) {
      answer(service.status(desk_name), "status");
    } else if (request.op == op::kSend) {
      answer(service.send(desk_name, *request.text, sender), "trigger");
    } else if (request.op == op::kCommands) {
      answer(service.commands(desk_name), "commands");
    } else if (request.op == op::kProposals) {
      answer(service.proposals(desk_name), "proposals");
    } else if (request.op == op::kAccept || request.op == op::kReject) {
      answer(service.decide(*request.proposal, request.op == op::kAccept, sender), "proposal");
    } else if (request.op == op::kFollow) {
      follow(request);
    } else if (request.op == op::kUnfollow) {
      unfollow(request);
    }
  }

  // Answers a line over the limit and hangs up once the answer is written.
  void refuse_long_line() {
    send(reply_error(nullptr, code::kTooLong,
                     "The request line is longer than " + std::to_string(kMaximumRequestBytes) +
                         " bytes; the connection is closed."));
    close_after_flush = true;
  }

  static asio::awaitable<void> serve(std::shared_ptr<Connection> self) {
    std::string buffer;
    std::size_t scanned = 0;
    while (!self->closed) {
      const std::size_t newline = buffer.find('\n', scanned);
      // A long line whose end arrived in the same read as its limit is still too long.
      if (newline != std::string::npos && newline > kMaximumRequestBytes) {
        self->refuse_long_line();
        break;
      }
      if (newline != std::string::npos) {
        std::string_view line(buffer.data(), newline);
        if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
        if (line.find_first_not_of(" \t") != std::string_view::npos) {
          try {
            self->handle(line);
          } catch (const std::exception& error) {
            // A service bug must cost one reply, never the daemon.
            self->send(reply_error(nullptr, code::kInternal, std::string("deskd failed to answer: ") + error.what()));
          }
        }
        buffer.erase(0, newline + 1);
        scanned = 0;
        continue;
      }
      scanned = buffer.size();
      if (buffer.size() > kMaximumRequestBytes) {
        self->refuse_long_line();
        break;
      }
      const std::size_t old_size = buffer.size();
      buffer.resize(old_size + kReadChunkBytes);
      auto [error, read] = co_await self->socket.async_read_some(asio::buffer(&buffer[old_size], kReadChunkBytes), kAwait);
      buffer.resize(old_size + (error ? 0 : read));
      if (error) break;
    }
    // The client went away (or sent too much): its follows end with it.
    for (auto& [id, subscription] : self->follows) subscription->close();
    self->follows.clear();
    if (self->writing) {
      self->close_after_flush = true;
    } else {
      self->close();
    }
  }
};

struct ControlServer::State {
  State(asio::any_io_executor executor, ControlServerSettings settings_, ControlService& service_)
      : acceptor(executor), settings(std::move(settings_)), service(service_) {}
  stream_protocol::acceptor acceptor;
  ControlServerSettings settings;
  ControlService& service;
  std::list<std::weak_ptr<Connection>> connections;
  bool closed = false;
  bool socket_created = false;
};

namespace {

// Whether a deskd already answers on `path`.
bool someone_listens(const std::filesystem::path& path) {
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  std::snprintf(address.sun_path, sizeof address.sun_path, "%s", path.c_str());
  const bool answered = ::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0;
  ::close(fd);
  return answered;
}

}  // namespace

Result<std::unique_ptr<ControlServer>> ControlServer::open(asio::any_io_executor executor,
                                                          ControlServerSettings settings, ControlService& service) {
  const std::filesystem::path path = settings.socket_path;
  if (path.native().size() >= sizeof(sockaddr_un{}.sun_path)) {
    return Error::make(ErrorCode::invalid_argument, "The socket path " + path.native() + " is too long for a Unix socket.");
  }
  std::error_code error;
  std::filesystem::create_directories(path.parent_path(), error);
  if (error) return Error::make(ErrorCode::system, "The socket folder " + path.parent_path().native() + " cannot be created: " + error.message() + ".");
  struct stat existing {};
  if (::lstat(path.c_str(), &existing) == 0) {
    if (!S_ISSOCK(existing.st_mode)) {
      return Error::make(ErrorCode::refused, path.native() + " exists and is not a socket; deskd will not replace it.");
    }
    if (someone_listens(path)) {
      return Error::make(ErrorCode::refused, "Another deskd is already listening on " + path.native() + ".");
    }
    ::unlink(path.c_str());  // left behind by a deskd that crashed
  }
  auto state = std::make_shared<State>(executor, std::move(settings), service);
  boost::system::error_code asio_error;
  state->acceptor.open(stream_protocol(), asio_error);
  // The socket file is born 0600 (umask) and only then opened up to 0660: there is no
  // moment when it is wider than it will be.
  const mode_t old_umask = ::umask(0177);
  if (!asio_error) state->acceptor.bind(stream_protocol::endpoint(path.native()), asio_error);
  ::umask(old_umask);
  if (asio_error) return Error::make(ErrorCode::system, "Binding the control socket " + path.native() + " failed: " + asio_error.message() + ".");
  state->socket_created = true;
  auto server = std::unique_ptr<ControlServer>(new ControlServer(state));
  if (state->settings.group && ::chown(path.c_str(), static_cast<uid_t>(-1), *state->settings.group) != 0) {
    return Error::from_errno(errno, "chown of the control socket " + path.native() + " to its group");
  }
  if (::chmod(path.c_str(), 0660) != 0) return Error::from_errno(errno, "chmod 0660 of the control socket " + path.native());
  state->acceptor.listen(asio::socket_base::max_listen_connections, asio_error);
  if (asio_error) return Error::make(ErrorCode::system, "Listening on " + path.native() + " failed: " + asio_error.message() + ".");
  return server;
}

ControlServer::~ControlServer() {
  close();
  if (state_->socket_created) ::unlink(state_->settings.socket_path.c_str());
}

asio::awaitable<void> ControlServer::run() {
  auto state = state_;
  while (!state->closed) {
    auto [error, socket] = co_await state->acceptor.async_accept(kAwait);
    if (error) {
      if (state->closed || error == asio::error::operation_aborted) break;
      continue;  // EMFILE and the like: the next accept may work
    }
    auto connection = std::make_shared<Connection>(std::move(socket), state->service, state->settings.warn);
    auto peer = peer_credentials(connection->socket.native_handle());
    if (!peer.ok() || !state->settings.policy.allows(*peer)) {
      const std::string who = peer.ok() ? PeerPolicy::describe(*peer) : std::string("an unknown peer");
      if (state->settings.warn) state->settings.warn("refused a control connection from " + who);
      connection->close_after_flush = true;
      connection->send(reply_error(nullptr, code::kNotAllowed, who + " is not allowed to use this deskd."));
      continue;
    }
    connection->sender = PeerPolicy::describe(*peer);
    state->connections.remove_if([](const std::weak_ptr<Connection>& weak) { return weak.expired(); });
    state->connections.push_back(connection);
    asio::co_spawn(state->acceptor.get_executor(), Connection::serve(connection),
                   [warn = state->settings.warn](std::exception_ptr escaped) { report_escape(escaped, warn); });
  }
}

void ControlServer::close() {
  if (state_->closed) return;
  state_->closed = true;
  boost::system::error_code ignored;
  state_->acceptor.close(ignored);
  for (auto& weak : state_->connections) {
    if (auto connection = weak.lock()) connection->close();
  }
  state_->connections.clear();
}

std::size_t ControlServer::connection_count() const {
  std::size_t count = 0;
  for (auto& weak : state_->connections) {
    if (auto connection = weak.lock(); connection && !connection->closed) ++count;
  }
  return count;
}

}  // namespace deskd::control
