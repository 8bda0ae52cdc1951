#include "runner/control/unix_listener.h"

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <boost/asio.hpp>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <string>
#include <thread>

namespace deskd::control {

namespace asio = boost::asio;
using asio::local::stream_protocol;

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

// Whether a deskd answers on `path` and goes on answering. A deskd killed a moment ago can
// leave its listener held for some milliseconds by children dying with it (a sandbox being
// set up holds every descriptor until it closes them), and a restart must not take that
// for another deskd; one that still answers after a second is one.
bool someone_still_listens(const std::filesystem::path& path) {
  for (int attempt = 0; attempt < 20; ++attempt) {
    if (!someone_listens(path)) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return true;
}

Error another_deskd_listens(const std::filesystem::path& path) {
  return Error::refusal("Another deskd is already listening on " + path.native() + ".");
}

// Opens `acceptor` on `path`, listening, with `group` and mode 0660, so that the file appears
// only once it listens: a client (or systemd) that connects the moment it appears is never
// refused. The socket is made under a name of its own beside `path` and linked into place;
// link(), unlike rename(), fails when another deskd got there first. A path too long for the
// staging name (the socket limit less ".<pid>." is left for it) is bound in place, where the
// file appears a moment before the listen. The file is born 0600 (umask) and only then opened
// up to 0660: there is no moment when it is wider than it will be.
Result<void> bind_and_listen(stream_protocol::acceptor& acceptor, const std::filesystem::path& path,
                             std::optional<gid_t> group) {
  std::filesystem::path staging =
      path.parent_path() / ("." + path.filename().native() + "." + std::to_string(::getpid()));
  if (staging.native().size() >= sizeof(sockaddr_un{}.sun_path)) staging = path;
  if (staging != path) ::unlink(staging.c_str());  // left by a deskd of this pid that crashed
  boost::system::error_code asio_error;
  acceptor.open(stream_protocol(), asio_error);
  const mode_t old_umask = ::umask(0177);
  if (!asio_error) acceptor.bind(stream_protocol::endpoint(staging.native()), asio_error);
  ::umask(old_umask);
  if (asio_error)
    return Error::make(ErrorCode::system,
                       "Binding the socket " + path.native() + " failed: " + asio_error.message() + ".");
  const auto placed = [&]() -> Result<void> {
    acceptor.listen(asio::socket_base::max_listen_connections, asio_error);
    if (asio_error)
      return Error::make(ErrorCode::system, "Listening on " + path.native() + " failed: " + asio_error.message() + ".");
    if (group && ::chown(staging.c_str(), static_cast<uid_t>(-1), *group) != 0) {
      return Error::from_errno(errno, "chown of the socket " + path.native() + " to its group");
    }
    if (::chmod(staging.c_str(), 0660) != 0)
      return Error::from_errno(errno, "chmod 0660 of the socket " + path.native());
    if (staging == path) return success();
    if (::link(staging.c_str(), path.c_str()) != 0) {
      if (errno == EEXIST) return another_deskd_listens(path);
      return Error::from_errno(errno, "putting the socket in place at " + path.native());
    }
    return success();
  }();
  // The staging name goes; so does a socket made in place that failed.
  if (staging != path || !placed.ok()) ::unlink(staging.c_str());
  return placed;
}

}  // namespace

Result<void> open_unix_listener(stream_protocol::acceptor& acceptor, const std::filesystem::path& path,
                                std::optional<gid_t> group) {
  if (path.native().size() >= sizeof(sockaddr_un{}.sun_path)) {
    return Error::make(ErrorCode::invalid_argument,
                       "The socket path " + path.native() + " is too long for a Unix socket.");
  }
  std::error_code error;
  std::filesystem::create_directories(path.parent_path(), error);
  if (error)
    return Error::make(ErrorCode::system, "The socket folder " + path.parent_path().native() +
                                              " cannot be created: " + error.message() + ".");
  struct stat existing {};
  if (::lstat(path.c_str(), &existing) == 0) {
    if (!S_ISSOCK(existing.st_mode)) {
      return Error::make(ErrorCode::refused, path.native() + " exists and is not a socket; deskd will not replace it.");
    }
    if (someone_still_listens(path)) return another_deskd_listens(path);
    ::unlink(path.c_str());  // left behind by a deskd that crashed
  }
  return bind_and_listen(acceptor, path, group);
}

}  // namespace deskd::control
