#pragma once
// `deskd serve`'s web page (docs/WEB.md): the WebServer opened as [runner] says — its Unix
// socket with the control socket's peers, its TCP listener with the token kept in
// <state folder>/web.token and TLS with the configured certificate — answering through the
// daemon, which it is attached to for the web_url op.

#include <sys/types.h>

#include <boost/asio/any_io_executor.hpp>

#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "base/clock.h"
#include "base/result.h"
#include "runner/config/config.h"
#include "runner/control/peer_policy.h"
#include "runner/web/web_server.h"

namespace deskd::app {

class Daemon;

/// What the web server takes from `deskd serve` besides [runner].
struct DaemonWebParts {
  control::PeerPolicy policy;  ///< the control socket's
  std::optional<gid_t> group;  ///< the control socket's group, for the web socket's file too
  std::function<void(const std::string&)> warn;
  std::string version;
  std::function<std::string()> metrics;  ///< GET /metrics; empty: 404
};

/// Opens the web server for `runner` and attaches it to `daemon`; null when web_socket and
/// web_listen are both off. Refused (deskd does not start) when the token file is not
/// deskd's own 0600 file, a listener cannot be bound, or the certificate cannot be used.
Result<std::unique_ptr<web::WebServer>> open_daemon_web(boost::asio::any_io_executor executor,
                                                        const RunnerConfig& runner, Daemon& daemon, const Clock& clock,
                                                        DaemonWebParts parts);

}  // namespace deskd::app
