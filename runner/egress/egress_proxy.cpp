#include "runner/egress/egress_proxy.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <cerrno>
#include <cstring>
#include <vector>

#include "base/exception_text.h"
#include "runner/egress/proxy_shared.h"

namespace deskd::egress {
namespace {

namespace asio = boost::asio;
using asio::awaitable;

// A connection counted as open for as long as this lives.
class OpenConnection {
 public:
  explicit OpenConnection(std::shared_ptr<ProxyShared> shared) : shared_(std::move(shared)) {}
  ~OpenConnection() { shared_->open_connections.fetch_sub(1); }
  OpenConnection(const OpenConnection&) = delete;
  OpenConnection& operator=(const OpenConnection&) = delete;

 private:
  std::shared_ptr<ProxyShared> shared_;
};

// What a handed connection is, by the address it was made to (the forwarder listens on
// the proxy port and on the names' addresses only).
struct Destination {
  enum class Kind { proxy, name, unknown } kind = Kind::unknown;
  std::string name;
  std::uint16_t port = 0;
};

Destination destination_of(const ProxyShared& shared, int connection) {
  sockaddr_storage local{};
  socklen_t length = sizeof local;
  if (::getsockname(connection, reinterpret_cast<sockaddr*>(&local), &length) != 0 || local.ss_family != AF_INET) {
    return {};
  }
  const auto& v4 = reinterpret_cast<const sockaddr_in&>(local);
  const std::uint16_t port = ntohs(v4.sin_port);
  const std::uint32_t host_order = ntohl(v4.sin_addr.s_addr);
  if (host_order == INADDR_LOOPBACK && port == sandbox::kEgressProxyPort) return {Destination::Kind::proxy, "", port};
  const auto address = policy::NetworkAddress::v4({static_cast<std::uint8_t>(host_order >> 24),
                                                   static_cast<std::uint8_t>(host_order >> 16),
                                                   static_cast<std::uint8_t>(host_order >> 8),
                                                   static_cast<std::uint8_t>(host_order)});
  if (const auto* name = policy::egress_name_at(shared.names, address, port)) {
    return {Destination::Kind::name, name->name, port};
  }
  return {};
}

// These three run detached (each connection and relay is on its own, and open_relay runs
// on the launching thread): so none may throw, and each reports what would have escaped.
awaitable<void> serve_counted(std::shared_ptr<ProxyShared> shared, asio::ip::tcp::socket client, Destination to) {
  OpenConnection counted(shared);
  try {
    if (to.kind == Destination::Kind::name)
      co_await serve_name_connection(shared, std::move(client), to.name, to.port);
    else
      co_await serve_proxy_connection(shared, std::move(client));
  } catch (...) {
    shared->report(to.name, to.port, "deskd's proxy failed: " + describe_exception(std::current_exception()));
  }
}

awaitable<void> refuse_counted(std::shared_ptr<ProxyShared> shared, asio::ip::tcp::socket client, std::string why) {
  // Counted until the coroutine ends, however it ends (a stopped io_context included).
  const std::shared_ptr<void> counted(nullptr, [shared](void*) { shared->refusing.fetch_sub(1); });
  try {
    co_await refuse_proxy_connection(shared, std::move(client), why);
  } catch (...) {
    shared->report("", 0, why + "; refusing failed: " + describe_exception(std::current_exception()));
  }
}

// The refusal a connection over the limit gets when too many are being read already,
// written without waiting: the socket buffer of a fresh connection always has room for one
// short reply.
void refuse_at_once(ProxyShared& shared, int fd, const std::string& why) {
  const std::string body = "deskd refused the connection: " + why + "\n";
  const std::string reply = "HTTP/1.1 403 Forbidden\r\nContent-Type: text/plain\r\nConnection: close\r\nContent-Length: " +
                            std::to_string(body.size()) + "\r\n\r\n" + body;
  (void)::send(fd, reply.data(), reply.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
  shared.report("", 0, why);
}

// One message from the forwarder: one byte and one descriptor. Anything else passed along
// (more descriptors) is closed: the relay is trusted only to hand over accepted TCP sockets.
int take_descriptor(int relay_fd, bool& ended) {
  char byte = 0;
  iovec part{&byte, 1};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * 4)];
  msghdr message{};
  message.msg_iov = &part;
  message.msg_iovlen = 1;
  message.msg_control = control;
  message.msg_controllen = sizeof control;
  const ssize_t got = ::recvmsg(relay_fd, &message, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
  if (got == 0 || (got < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) ended = true;
  if (got <= 0) return -1;
  int connection = -1;
  for (cmsghdr* header = CMSG_FIRSTHDR(&message); header != nullptr; header = CMSG_NXTHDR(&message, header)) {
    if (header->cmsg_level != SOL_SOCKET || header->cmsg_type != SCM_RIGHTS) continue;
    const std::size_t count = (header->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    for (std::size_t index = 0; index < count; ++index) {
      int fd = -1;
      std::memcpy(&fd, CMSG_DATA(header) + index * sizeof(int), sizeof(int));
      if (connection < 0) connection = fd;
      else ::close(fd);
    }
  }
  int type = 0;
  socklen_t length = sizeof type;
  if (connection >= 0 && (::getsockopt(connection, SOL_SOCKET, SO_TYPE, &type, &length) != 0 || type != SOCK_STREAM)) {
    ::close(connection);
    return -1;
  }
  return connection;
}

awaitable<void> read_relay_or_throw(std::shared_ptr<ProxyShared> shared, asio::posix::stream_descriptor relay);

awaitable<void> read_relay(std::shared_ptr<ProxyShared> shared, asio::posix::stream_descriptor relay) {
  try {
    co_await read_relay_or_throw(shared, std::move(relay));
  } catch (...) {
    shared->report("", 0,
                   "deskd's egress relay failed, and takes no more connections from this sandbox: " +
                       describe_exception(std::current_exception()));
  }
}

awaitable<void> read_relay_or_throw(std::shared_ptr<ProxyShared> shared, asio::posix::stream_descriptor relay) {
  for (;;) {
    auto [waited] = co_await relay.async_wait(asio::posix::stream_descriptor::wait_read, asio::as_tuple(asio::use_awaitable));
    if (waited) co_return;
    bool ended = false;
    const int connection = take_descriptor(relay.native_handle(), ended);
    if (ended) co_return;  // the sandbox (and its forwarder) is gone
    if (connection < 0) continue;
    const Destination to = destination_of(*shared, connection);
    if (to.kind == Destination::Kind::unknown) {  // not a place deskd gave the sandbox
      ::close(connection);
      continue;
    }
    asio::ip::tcp::socket client(shared->executor);
    boost::system::error_code error;
    client.assign(asio::ip::tcp::v4(), connection, error);
    if (error) {
      ::close(connection);
      continue;
    }
    if (shared->open_connections.load() >= shared->settings.limits.connections) {
      const std::string why = "the desk already has " + std::to_string(shared->settings.limits.connections) +
                              " connections open (egress_connections)";
      if (to.kind == Destination::Kind::name) {
        shared->report(to.name, to.port, why);  // no HTTP to answer in: closed
        continue;
      }
      if (shared->refusing.load() >= kMaximumRefusalsReading) {
        refuse_at_once(*shared, client.native_handle(), why);
        continue;
      }
      shared->refusing.fetch_add(1);
      asio::co_spawn(shared->executor, refuse_counted(shared, std::move(client), why), asio::detached);  // cannot throw
      continue;
    }
    shared->open_connections.fetch_add(1);
    asio::co_spawn(shared->executor, serve_counted(shared, std::move(client), to), asio::detached);  // cannot throw
  }
}

class EgressProxy final : public sandbox::EgressRelaySource {
 public:
  explicit EgressProxy(std::shared_ptr<ProxyShared> shared) : shared_(std::move(shared)) {}

  Result<UniqueFd> open_relay() override {
    int ends[2];
    if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, ends) != 0) {
      return Error::from_errno(errno, "socketpair for the egress relay");
    }
    UniqueFd sandbox_end(ends[1]);
    // Asio 1.81 has no seq_packet socket; a descriptor waited on for readability is all the
    // relay needs (recvmsg reads it, with the passed descriptor).
    asio::posix::stream_descriptor relay(shared_->executor);
    boost::system::error_code error;
    relay.assign(ends[0], error);
    if (error) {
      ::close(ends[0]);
      return Error::make(ErrorCode::system, "taking the egress relay: " + error.message());
    }
    // co_spawn posts: safe from the launching thread. read_relay cannot throw.
    asio::co_spawn(shared_->executor, read_relay(shared_, std::move(relay)), asio::detached);
    return sandbox_end;
  }

 private:
  std::shared_ptr<ProxyShared> shared_;
};

}  // namespace

void ProxyShared::report(std::string host, std::uint16_t port, std::string why) {
  const auto admitted = reports_.admit();
  if (!admitted) return;
  const std::uint64_t unreported = *admitted;
  if (sink) sink(EgressRefusal{std::move(host), port, std::move(why), unreported});
}

bool ProxyShared::charge(std::uint64_t bytes) {
  return bytes_used.fetch_add(bytes) + bytes <= settings.limits.bytes;
}

std::shared_ptr<sandbox::EgressRelaySource> make_egress_proxy(asio::any_io_executor executor, EgressSettings settings,
                                                              std::vector<policy::EgressName> names, RefusalSink sink) {
  auto shared = std::make_shared<ProxyShared>();
  shared->executor = std::move(executor);
  shared->settings = std::move(settings);
  shared->sink = std::move(sink);
  shared->names = std::move(names);
  return std::make_shared<EgressProxy>(std::move(shared));
}

Result<void> attach_egress_proxy(sandbox::SandboxSpec& spec, asio::any_io_executor executor, RefusalSink sink,
                                 std::shared_ptr<ApiGate> gate, EgressOutcomeObserver outcomes) {
  if (spec.network != sandbox::NetworkMode::allowlist) {
    if (gate) return Error::make(ErrorCode::invalid_argument, "a desk that names APIs needs network = \"allowlist\"");
    return success();
  }
  // The builder parsed the allowlist once (SandboxSpecBuilder::apply); the proxy takes it.
  EgressSettings egress{spec.allowlist, spec.egress_limits, std::move(gate)};
  egress.outcomes = std::move(outcomes);
  spec.egress = make_egress_proxy(std::move(executor), std::move(egress), spec.egress_names, std::move(sink));
  return success();
}

std::string describe_network(const sandbox::SandboxSettings& settings) {
  switch (settings.network) {
    case sandbox::NetworkMode::none:
      return "none (loopback only)";
    case sandbox::NetworkMode::host:
      return "host (the host's whole network)";
    case sandbox::NetworkMode::allowlist:
      break;
  }
  std::string text = "allowlist (through deskd's proxy):";
  if (settings.allowed_hosts.empty()) return text + " nothing allowed";
  for (std::size_t index = 0; index < settings.allowed_hosts.size(); ++index) {
    text += (index == 0 ? " " : ", ") + settings.allowed_hosts[index];
  }
  return text;
}

}  // namespace deskd::egress
