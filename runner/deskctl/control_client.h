#pragma once
// ControlClient: the client end of the control socket, for deskctl and the tests. Plain
// blocking I/O: a command-line client waits for its answer anyway.

#include <boost/json/object.hpp>

#include <filesystem>
#include <optional>
#include <string>

#include "base/result.h"
#include "base/unique_fd.h"

namespace deskd::control {

class ControlClient {
 public:
  /// Connects to the socket at `path`; the error says why deskd cannot be reached.
  static Result<ControlClient> connect(const std::filesystem::path& path);

  /// Sends one request line. When deskd hung up after a line saying why (it turns a client
  /// away that way), that counts as sent: the next read() returns the line.
  Result<void> send(const boost::json::object& request);

  /// The next line from deskd as an object; nullopt when deskd closed the connection.
  Result<std::optional<boost::json::object>> read();

  /// Sends `request` (with a fresh "id") and reads lines until the reply to it.
  Result<boost::json::object> call(boost::json::object request);

  int fd() const { return fd_.get(); }

 private:
  explicit ControlClient(UniqueFd fd) : fd_(std::move(fd)) {}
  /// Reads until a whole line from deskd is buffered; false at end of stream first.
  bool said_why_it_hung_up();
  UniqueFd fd_;
  std::string buffer_;
  std::int64_t next_id_ = 1;
};

}  // namespace deskd::control
