#include "runner/deskctl/control_client.h"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <boost/json.hpp>

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace deskd::control {

namespace json = boost::json;

Result<ControlClient> ControlClient::connect(const std::filesystem::path& path) {
  sockaddr_un address{};
  if (path.native().size() >= sizeof address.sun_path) {
    return Error::make(ErrorCode::invalid_argument, "The socket path " + path.native() + " is too long.");
  }
  UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd) return Error::from_errno(errno, "socket(AF_UNIX)");
  address.sun_family = AF_UNIX;
  std::snprintf(address.sun_path, sizeof address.sun_path, "%s", path.c_str());
  if (retry_on_eintr([&] { return ::connect(fd.get(), reinterpret_cast<sockaddr*>(&address), sizeof address); }) != 0) {
    const int error = errno;
    std::string why = "Cannot reach deskd at " + path.native() + ": ";
    if (error == ENOENT) why += "there is no socket there (is deskd running? is --socket right?)";
    else if (error == ECONNREFUSED) why += "nobody is listening (deskd is not running)";
    else if (error == EACCES) why += "permission denied (are you in deskd's socket group?)";
    else why += std::strerror(error);
    return Error{ErrorCode::system, error, why + "."};
  }
  return ControlClient(std::move(fd));
}

Result<void> ControlClient::send(const json::object& request) {
  const std::string line = json::serialize(request) + "\n";
  for (std::size_t offset = 0; offset < line.size();) {
    const ssize_t written =
        retry_on_eintr([&] { return ::send(fd_.get(), line.data() + offset, line.size() - offset, MSG_NOSIGNAL); });
    if (written <= 0) {
      const int error = errno;
      // deskd hangs up on a client it turns away (too many clients, not allowed, too slow)
      // after one line saying why, and may do so before this request is written: that line,
      // read next, is the answer.
      if ((error == EPIPE || error == ECONNRESET) && said_why_it_hung_up()) return success();
      return Error::from_errno(error, "writing to deskd's socket");
    }
    offset += static_cast<std::size_t>(written);
  }
  return success();
}

bool ControlClient::said_why_it_hung_up() {
  while (buffer_.find('\n') == std::string::npos) {
    char chunk[4096];
    const ssize_t count = retry_on_eintr([&] { return ::read(fd_.get(), chunk, sizeof chunk); });
    if (count <= 0) return false;
    buffer_.append(chunk, static_cast<std::size_t>(count));
  }
  return true;
}

Result<std::optional<json::object>> ControlClient::read() {
  for (;;) {
    const std::size_t newline = buffer_.find('\n');
    if (newline != std::string::npos) {
      const std::string line = buffer_.substr(0, newline);
      buffer_.erase(0, newline + 1);
      boost::system::error_code error;
      json::value value = json::parse(line, error);
      if (error || !value.is_object()) {
        return Error::make(ErrorCode::invalid_argument, "deskd sent a line that is not a JSON object: " + line.substr(0, 200));
      }
      return std::optional<json::object>(std::move(value.as_object()));
    }
    char chunk[65536];
    const ssize_t count = retry_on_eintr([&] { return ::read(fd_.get(), chunk, sizeof chunk); });
    if (count < 0) return Error::from_errno(errno, "reading from deskd's socket");
    if (count == 0) return std::optional<json::object>();
    buffer_.append(chunk, static_cast<std::size_t>(count));
  }
}

Result<json::object> ControlClient::call(json::object request) {
  const std::int64_t id = next_id_++;
  request["id"] = id;
  DESKD_RETURN_IF_ERROR(send(request));
  for (;;) {
    DESKD_ASSIGN_OR_RETURN(auto line, read());
    if (!line) return Error::make(ErrorCode::system, "deskd closed the connection before answering.");
    const json::value* reply_id = line->if_contains("id");
    if (reply_id != nullptr && reply_id->is_int64() && reply_id->as_int64() == id) return std::move(*line);
    if (reply_id != nullptr && reply_id->is_null() && line->contains("error")) return std::move(*line);
  }
}

}  // namespace deskd::control
