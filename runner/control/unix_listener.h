#pragma once
// A Unix listening socket as deskd's sockets are made (the control socket, the web page's):
// refused when another deskd answers on the path, a stale socket file left by a crash
// removed, the parent folder made (0755), and the file linked into place only once it
// listens, with mode 0660 and the given group.

#include <sys/types.h>

#include <boost/asio/local/stream_protocol.hpp>

#include <filesystem>
#include <optional>

#include "base/result.h"

namespace deskd::control {

/// Opens `acceptor` listening on `path` (see above).
Result<void> open_unix_listener(boost::asio::local::stream_protocol::acceptor& acceptor,
                                const std::filesystem::path& path, std::optional<gid_t> group);

}  // namespace deskd::control
