#pragma once
// ControlServer: the daemon's Unix control socket. It creates the socket (mode 0660, the
// configured group), checks every peer with SO_PEERCRED, reads one JSON request a line and
// answers through the ControlService. Bad input gets an error reply and the connection
// stays; a line over kMaximumRequestBytes gets an error and a close. Each connection writes
// through its own queue, so a slow or stuck client only ever delays itself: its event
// streams drop their oldest events (and say how many) rather than hold a desk up.

#include <sys/types.h>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>

#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "base/result.h"
#include "runner/control/peer_policy.h"

namespace deskd::control {

class ControlService;

struct ControlServerSettings {
  std::filesystem::path socket_path;
  std::optional<gid_t> group;  ///< the socket file's group; none: deskd's own
  PeerPolicy policy;
  /// Told about refused peers and failed connections; may be empty.
  std::function<void(const std::string&)> warn;
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
