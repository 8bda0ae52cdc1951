#pragma once
// ControlServer: the daemon's Unix control socket. It creates the socket (mode 0660, the
// configured group), checks every peer with SO_PEERCRED, reads one JSON request a line and
// answers through the ControlService. Bad input gets an error reply and the connection
// stays; a line over kMaximumRequestBytes gets an error and a close. Each connection writes
// through its own queue, capped at `client_buffer_bytes`, so a slow or stuck client only
// ever delays itself: its event streams drop their oldest events (and say how many), and a
// client that lets its replies pile up past the cap is told it is too slow and dropped.
// At most `max_clients` connections are served at once, and at most a quarter of them
// (max_clients_per_uid) for one uid, so that no allowed user can lock the others out;
// root and deskd's own uid are not capped per uid and always find one of
// kReservedPrivilegedClients slots kept beyond max_clients. A connection that sends no
// complete request within `request_deadline` (and follows nothing, and waits for no answer)
// is told so and closed: connections that never speak hold no place for long. When deskd
// runs out of descriptors the accept loop waits instead of spinning. Repeated warnings are
// rate-limited.

#include <sys/types.h>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>

#include <chrono>
#include <cstddef>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "base/result.h"
#include "runner/control/peer_policy.h"

namespace deskd::control {

class ControlService;

/// The cap on one connection's unread replies and events, by default.
inline constexpr std::size_t kDefaultClientBufferBytes = std::size_t{8} << 20;
/// How many connections are served at once, by default.
inline constexpr std::size_t kDefaultMaximumClients = 256;
/// Slots beyond max_clients that only root and deskd's own uid may take.
inline constexpr std::size_t kReservedPrivilegedClients = 4;
/// How long a connection may take to send a complete request line, by default.
inline constexpr std::chrono::milliseconds kDefaultRequestDeadline{10000};
/// How many connections one uid other than root and deskd's own may hold: a quarter of
/// `max_clients`, and at least 4.
std::size_t max_clients_per_uid(std::size_t max_clients);
/// The one admission rule of deskd's sockets (control and web): why a client gets no place
/// ("" when it gets one). `live` connections are open, `held_by_peer` of them its peer's;
/// a privileged peer (root, deskd's own uid) may use kReservedPrivilegedClients places past
/// `max_clients`; any other peer at most max_clients_per_uid. `who` names the peer,
/// `clients` what is counted ("clients", "web clients").
std::string client_refusal(std::size_t live, std::size_t held_by_peer, bool privileged, std::size_t max_clients,
                           const std::string& who, std::string_view clients = "clients");
/// How long the accept loop waits when deskd is out of descriptors (EMFILE, ENFILE).
inline constexpr std::chrono::milliseconds kAcceptBackoff{100};

struct ControlServerSettings {
  std::filesystem::path socket_path;
  std::optional<gid_t> group;  ///< the socket file's group; none: deskd's own
  PeerPolicy policy;
  /// Told about refused peers and failed connections, at most a few lines a second for
  /// each kind; may be empty.
  std::function<void(const std::string&)> warn;
  std::size_t client_buffer_bytes = kDefaultClientBufferBytes;
  std::size_t max_clients = kDefaultMaximumClients;
  /// A connection idle this long (no complete request, no follow, no answer pending) closes.
  std::chrono::milliseconds request_deadline = kDefaultRequestDeadline;
};

class ControlServer {
 public:
  /// Binds the socket. Refuses when another deskd answers on the path; removes a stale
  /// socket file left by a crash; creates a missing parent folder (mode 0755).
  static Result<std::unique_ptr<ControlServer>> open(boost::asio::any_io_executor executor,
                                                     ControlServerSettings settings, ControlService& service);
  ~ControlServer();  ///< Closes, and removes the socket file.

  /// Accepts connections until close().
  boost::asio::awaitable<void> run();

  /// The first phase of a shutdown: from now on every request (on any connection, new ones
  /// too) is answered with a "stopping" error carrying `message`, and every follow is told
  /// with a {"id", "stopping": true, "notice"} line; follows go on streaming.
  void begin_stopping(std::string message);

  /// The last phase: stops accepting, ends every follow with a final "stopping" error line,
  /// and gives every connection up to `flush_timeout` to take what is queued; then closes.
  boost::asio::awaitable<void> stop(std::chrono::milliseconds flush_timeout);

  /// Stops accepting and ends every connection (queued replies are dropped).
  void close();

  /// How many connections are open (for tests and status).
  std::size_t connection_count() const;

 private:
  struct State;
  explicit ControlServer(std::shared_ptr<State> state) : state_(std::move(state)) {}
  std::shared_ptr<State> state_;
};

}  // namespace deskd::control
