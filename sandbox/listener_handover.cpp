#include "sandbox/listener_handover.h"

#include <sys/socket.h>

#include <cerrno>
#include <cstring>

#include "sandbox/seccomp_notification.h"

namespace deskd::sandbox {

void ListenerHandover::complete() {
  if (!channel || !reporter) return;
  char byte = 0;
  iovec data{&byte, 1};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))];
  msghdr message{};
  message.msg_iov = &data;
  message.msg_iovlen = 1;
  message.msg_control = control;
  message.msg_controllen = sizeof control;
  const ssize_t got =
      retry_on_eintr([&] { return ::recvmsg(channel.get(), &message, MSG_DONTWAIT | MSG_CMSG_CLOEXEC); });
  channel.reset();
  if (got <= 0) return;  // the kernel refused the listener flag: the plain filter is in place
  for (cmsghdr* header = CMSG_FIRSTHDR(&message); header != nullptr; header = CMSG_NXTHDR(&message, header)) {
    if (header->cmsg_level == SOL_SOCKET && header->cmsg_type == SCM_RIGHTS &&
        header->cmsg_len == CMSG_LEN(sizeof(int))) {
      int listener = -1;
      std::memcpy(&listener, CMSG_DATA(header), sizeof listener);
      reporter->watch_seccomp_listener(UniqueFd(listener));
    }
  }
}

Result<ListenerHandover> make_listener_handover(std::shared_ptr<RefusalReporter> reporter, UniqueFd& child_end) {
  static const bool kAvailable = seccomp_user_notification_available() && !deskd_under_seccomp_filter();
  if (!reporter || !kAvailable) return ListenerHandover{};
  int pair[2];
  if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pair) != 0) {
    return Error::from_errno(errno,
                             "The sandbox could not be set up: creating the channel for its seccomp listener failed");
  }
  child_end = UniqueFd(pair[1]);
  return ListenerHandover{UniqueFd(pair[0]), std::move(reporter)};
}

int send_listener(int channel, int listener) {
  char byte = 0;
  iovec data{&byte, 1};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))];
  std::memset(control, 0, sizeof control);
  msghdr message{};
  message.msg_iov = &data;
  message.msg_iovlen = 1;
  message.msg_control = control;
  message.msg_controllen = sizeof control;
  cmsghdr* header = CMSG_FIRSTHDR(&message);
  header->cmsg_level = SOL_SOCKET;
  header->cmsg_type = SCM_RIGHTS;
  header->cmsg_len = CMSG_LEN(sizeof(int));
  std::memcpy(CMSG_DATA(header), &listener, sizeof listener);
  ssize_t sent;
  do {
    sent = ::sendmsg(channel, &message, MSG_NOSIGNAL);
  } while (sent < 0 && errno == EINTR);
  return sent == 1 ? 0 : -1;
}

}  // namespace deskd::sandbox
