/* See egress_forwarder.h. */
#define _GNU_SOURCE
#include "egress_forwarder.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netinet/in.h>
#include <signal.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/* Every descriptor but `keep_low` and `keep_high` (keep_low < keep_high) is closed: the
 * forwarder must not hold the launcher's failure pipe (which would keep a launch waiting)
 * nor the command's streams. */
static void close_all_but(int keep_low, int keep_high) {
  if (keep_low > 0) syscall(SYS_close_range, 0U, (unsigned)keep_low - 1, 0U);
  if (keep_high > keep_low + 1) syscall(SYS_close_range, (unsigned)keep_low + 1, (unsigned)keep_high - 1, 0U);
  syscall(SYS_close_range, (unsigned)keep_high + 1, UINT_MAX, 0U);
}

static int hand_over(int relay_fd, int connection) {
  char byte = 'c';
  struct iovec part = {&byte, 1};
  union {
    char bytes[CMSG_SPACE(sizeof(int))];
    struct cmsghdr align;
  } control;
  memset(&control, 0, sizeof control);
  struct msghdr message;
  memset(&message, 0, sizeof message);
  message.msg_iov = &part;
  message.msg_iovlen = 1;
  message.msg_control = control.bytes;
  message.msg_controllen = sizeof control.bytes;
  struct cmsghdr *header = CMSG_FIRSTHDR(&message);
  header->cmsg_level = SOL_SOCKET;
  header->cmsg_type = SCM_RIGHTS;
  header->cmsg_len = CMSG_LEN(sizeof(int));
  memcpy(CMSG_DATA(header), &connection, sizeof(int));
  ssize_t sent;
  do {
    sent = sendmsg(relay_fd, &message, MSG_NOSIGNAL);
  } while (sent < 0 && errno == EINTR);
  return sent == 1 ? 0 : -1;
}

static _Noreturn void forward(int listener, int relay_fd) {
  for (;;) {
    const int connection = accept4(listener, NULL, NULL, SOCK_CLOEXEC);
    if (connection < 0) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      /* Out of descriptors or memory: wait a little rather than spin. */
      const struct timespec pause = {0, 20 * 1000 * 1000};
      nanosleep(&pause, NULL);
      continue;
    }
    const int handed = hand_over(relay_fd, connection);
    close(connection); /* deskd holds its own copy now; the client sees a reset if it does not */
    if (handed != 0 && (errno == EPIPE || errno == ECONNRESET || errno == ENOTCONN)) _exit(0); /* deskd is gone */
  }
}

int deskd_start_egress_forwarder(int relay_fd, uint16_t port, const char **step) {
  *step = "listen on the desk's proxy port (127.0.0.1)";
  const int listener = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (listener < 0) return -1;
  const int yes = 1;
  setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
  struct sockaddr_in address;
  memset(&address, 0, sizeof address);
  address.sin_family = AF_INET;
  address.sin_port = htons(port);
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (bind(listener, (struct sockaddr *)&address, sizeof address) != 0 || listen(listener, 128) != 0) {
    const int saved = errno;
    close(listener);
    errno = saved;
    return -1;
  }
  *step = "start the egress forwarder";
  const pid_t forwarder = fork();
  if (forwarder < 0) {
    const int saved = errno;
    close(listener);
    errno = saved;
    return -1;
  }
  if (forwarder == 0) {
    signal(SIGPIPE, SIG_IGN);
    if (listener < relay_fd) close_all_but(listener, relay_fd);
    else close_all_but(relay_fd, listener);
    forward(listener, relay_fd);
  }
  close(listener);
  close(relay_fd);
  return 0;
}
