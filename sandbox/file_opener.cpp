#include "sandbox/file_opener.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "sandbox/init/init_protocol.h"
#include "sandbox/launcher.h"

namespace deskd::sandbox {
namespace {

bool copy_path(char (&destination)[DESKD_FILE_PATH_BYTES], const char* path) {
  const std::size_t length = path == nullptr ? 0 : std::strlen(path);
  if (length >= sizeof destination) return false;
  std::memcpy(destination, path, length);
  destination[length] = '\0';
  return true;
}

bool send_request(int socket, const deskd_file_request& request, int directory) {
  iovec part{const_cast<deskd_file_request*>(&request), sizeof request};
  msghdr message{};
  message.msg_iov = &part;
  message.msg_iovlen = 1;
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  if (directory >= 0) {
    message.msg_control = control;
    message.msg_controllen = sizeof control;
    cmsghdr* header = CMSG_FIRSTHDR(&message);
    header->cmsg_level = SOL_SOCKET;
    header->cmsg_type = SCM_RIGHTS;
    header->cmsg_len = CMSG_LEN(sizeof(int));
    std::memcpy(CMSG_DATA(header), &directory, sizeof(int));
  }
  const ssize_t sent = retry_on_eintr([&] { return ::sendmsg(socket, &message, MSG_NOSIGNAL); });
  return sent == static_cast<ssize_t>(sizeof request);
}

// The reply and the descriptor with it; false when the helper is gone or answered nonsense.
bool receive_reply(int socket, deskd_file_reply& reply, int& descriptor, std::chrono::milliseconds patience) {
  descriptor = -1;
  pollfd ready{socket, POLLIN, 0};
  if (retry_on_eintr([&] { return ::poll(&ready, 1, static_cast<int>(patience.count())); }) <= 0) return false;
  iovec part{&reply, sizeof reply};
  msghdr message{};
  message.msg_iov = &part;
  message.msg_iovlen = 1;
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  message.msg_control = control;
  message.msg_controllen = sizeof control;
  const ssize_t got = retry_on_eintr([&] { return ::recvmsg(socket, &message, MSG_CMSG_CLOEXEC); });
  for (cmsghdr* header = CMSG_FIRSTHDR(&message); header != nullptr; header = CMSG_NXTHDR(&message, header)) {
    if (header->cmsg_level == SOL_SOCKET && header->cmsg_type == SCM_RIGHTS &&
        header->cmsg_len == CMSG_LEN(sizeof(int))) {
      std::memcpy(&descriptor, CMSG_DATA(header), sizeof(int));
    }
  }
  if (got != static_cast<ssize_t>(sizeof reply) || (message.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) != 0) {
    if (descriptor >= 0) ::close(descriptor);
    descriptor = -1;
    return false;
  }
  return true;
}

}  // namespace

FileOpener::FileOpener(SandboxSpec spec, std::chrono::milliseconds patience)
    : spec_(std::move(spec)), patience_(patience) {}

FileOpener::~FileOpener() { close(); }

void FileOpener::close() {
  std::lock_guard lock(mutex_);
  stop();
}

void FileOpener::stop() const {
  socket_.reset();  // the helper reads EOF and ends
  if (helper_) helper_->close();
  helper_.reset();
}

bool FileOpener::ensure_started() const {
  if (helper_ && socket_) return true;
  stop();
  int pair[2];
  if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pair) != 0) return false;
  UniqueFd ours(pair[0]);
  UniqueFd theirs(pair[1]);
  auto launched = launch_file_opener(spec_, theirs.get());
  if (!launched.ok()) {
    errno = launched.error().error_number != 0 ? launched.error().error_number : EIO;
    return false;
  }
  helper_.emplace(std::move(launched).value());
  socket_ = std::move(ours);
  return true;
}

std::optional<std::chrono::steady_clock::time_point> FileOpener::close_if_unused_for(std::chrono::milliseconds idle) {
  const auto now = std::chrono::steady_clock::now();
  // A call holds the lock: it is in use, and the caller's loop must not wait for it.
  std::unique_lock lock(mutex_, std::try_to_lock);
  if (!lock.owns_lock()) return now;
  if (!helper_) return std::nullopt;
  if (now - last_used_ < idle) return last_used_;
  stop();
  return std::nullopt;
}

int FileOpener::call(deskd_file_request& request, int directory, deskd_file_reply* answer) const {
  std::lock_guard lock(mutex_);
  // Whatever way the call ends, it was a use (FileOpener::close_if_unused_for).
  struct NoteUse {
    std::chrono::steady_clock::time_point& last_used;
    ~NoteUse() { last_used = std::chrono::steady_clock::now(); }
  } note_use{last_used_};
  request.has_directory = directory >= 0 ? 1 : 0;
  // A request that never reached a helper is safe to send again, to a new one.
  for (int attempt = 0;; ++attempt) {
    if (!ensure_started()) return -1;
    if (send_request(socket_.get(), request, directory)) break;
    stop();
    if (attempt == 1) {
      errno = EIO;
      return -1;
    }
  }
  deskd_file_reply reply{};
  int descriptor = -1;
  if (!receive_reply(socket_.get(), reply, descriptor, patience_)) {
    stop();  // gone, or stuck in a call (a FUSE file, say): the next call starts afresh
    errno = EIO;
    return -1;
  }
  if (reply.result < 0) {
    if (descriptor >= 0) ::close(descriptor);
    errno = reply.error_number != 0 ? reply.error_number : EIO;
    return -1;
  }
  if (answer != nullptr) *answer = reply;
  if (request.operation == DESKD_FILE_OPEN) {
    if (descriptor < 0) {
      errno = EIO;
      return -1;
    }
    return descriptor;
  }
  if (descriptor >= 0) ::close(descriptor);
  return reply.result;
}

namespace {

// The request is large (two paths); one per thread, reused, keeps it off small stacks.
thread_local deskd_file_request request_buffer;

// The thread's request for `operation` on `path` (and `second`), or null with errno
// ENAMETOOLONG when a path does not fit.
deskd_file_request* request_for(deskd_file_operation operation, const char* path, const char* second = "") {
  request_buffer = deskd_file_request{};
  request_buffer.operation = operation;
  if (!copy_path(request_buffer.path, path) || !copy_path(request_buffer.second_path, second)) {
    errno = ENAMETOOLONG;
    return nullptr;
  }
  return &request_buffer;
}

int directory_to_send(int directory) { return directory == AT_FDCWD ? -1 : directory; }

}  // namespace

int FileOpener::open(int directory, const char* path, int flags, mode_t mode, std::uint64_t resolve) const {
  deskd_file_request* request = request_for(DESKD_FILE_OPEN, path);
  if (request == nullptr) return -1;
  request->flags = flags;
  request->mode = mode;
  request->resolve = resolve;
  return call(*request, directory_to_send(directory));
}

int FileOpener::make_directory(int directory, const char* path, mode_t mode) const {
  deskd_file_request* request = request_for(DESKD_FILE_MKDIR, path);
  if (request == nullptr) return -1;
  request->mode = mode;
  return call(*request, directory_to_send(directory));
}

int FileOpener::rename(int directory, const char* from, const char* to) const {
  deskd_file_request* request = request_for(DESKD_FILE_RENAME, from, to);
  if (request == nullptr) return -1;
  return call(*request, directory_to_send(directory));
}

int FileOpener::unlink(int directory, const char* path, int flags) const {
  deskd_file_request* request = request_for(DESKD_FILE_UNLINK, path);
  if (request == nullptr) return -1;
  request->flags = flags;
  return call(*request, directory_to_send(directory));
}

int FileOpener::stat(int directory, const char* path, struct stat* status, int flags) const {
  deskd_file_request* request = request_for(DESKD_FILE_STAT, path);
  if (request == nullptr) return -1;
  request->flags = flags;
  thread_local deskd_file_reply reply;
  const int result = call(*request, directory_to_send(directory), &reply);
  if (result >= 0) *status = reply.status;
  return result;
}

long FileOpener::read_link(int directory, const char* path, char* buffer, std::size_t size) const {
  deskd_file_request* request = request_for(DESKD_FILE_READLINK, path);
  if (request == nullptr) return -1;
  thread_local deskd_file_reply reply;
  const int result = call(*request, directory_to_send(directory), &reply);
  if (result < 0) return -1;
  const auto length = std::min({static_cast<std::size_t>(result), sizeof reply.link, size});
  std::memcpy(buffer, reply.link, length);
  return static_cast<long>(length);
}

}  // namespace deskd::sandbox
