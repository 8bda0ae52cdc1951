/* See egress_forwarder.h. */
#define _GNU_SOURCE
#include "egress_forwarder.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/* Every descriptor but the `count` ones in `keep` (ascending) is closed: the forwarder must
 * not hold the launcher's failure pipe (which would keep a launch waiting) nor the
 * command's streams. */
static void close_all_but(const int *keep, unsigned count) {
  unsigned first = 0;
  for (unsigned index = 0; index < count; ++index) {
    if ((unsigned)keep[index] > first) syscall(SYS_close_range, first, (unsigned)keep[index] - 1, 0U);
    first = (unsigned)keep[index] + 1;
  }
  syscall(SYS_close_range, first, UINT_MAX, 0U);
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

/* The listeners: the proxy port first, then one per allowed name and port. */
static struct pollfd listening[1 + DESKD_EGRESS_MAX_LISTENERS];

static _Noreturn void forward(unsigned count, int relay_fd) {
  for (;;) {
    if (poll(listening, count, -1) < 0) continue; /* EINTR */
    for (unsigned index = 0; index < count; ++index) {
      if ((listening[index].revents & POLLIN) == 0) continue;
      const int connection = accept4(listening[index].fd, NULL, NULL, SOCK_CLOEXEC);
      if (connection < 0) {
        if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR || errno == ECONNABORTED) continue;
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
}

/* A non-blocking listener on `address` (network order):`port`, or -1 with errno. */
static int listen_on(uint32_t address, uint16_t port) {
  const int listener = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (listener < 0) return -1;
  const int yes = 1;
  setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
  struct sockaddr_in where;
  memset(&where, 0, sizeof where);
  where.sin_family = AF_INET;
  where.sin_port = htons(port);
  where.sin_addr.s_addr = address;
  if (bind(listener, (struct sockaddr *)&where, sizeof where) != 0 || listen(listener, 128) != 0) {
    const int saved = errno;
    close(listener);
    errno = saved;
    return -1;
  }
  return listener;
}

static void close_listeners(unsigned count) {
  const int saved = errno;
  for (unsigned index = 0; index < count; ++index) close(listening[index].fd);
  errno = saved;
}

int deskd_start_egress_forwarder(int relay_fd, uint16_t port, const struct deskd_egress_listener *more,
                                 uint32_t more_count, const char **step) {
  *step = "listen on the desk's proxy port (127.0.0.1)";
  if (more_count > DESKD_EGRESS_MAX_LISTENERS) {
    errno = EINVAL;
    return -1;
  }
  unsigned count = 0;
  listening[0].fd = listen_on(htonl(INADDR_LOOPBACK), port);
  if (listening[0].fd < 0) return -1;
  listening[0].events = POLLIN;
  count = 1;
  *step = "listen on the loopback address of an allowed name (/etc/hosts)";
  for (uint32_t index = 0; index < more_count; ++index) {
    /* Only 127.100.0.0/16, which deskd gives the names: nothing else is deskd's to take. */
    if ((ntohl(more[index].address) >> 16) != ((127u << 8) | 100u) || more[index].port == 0 ||
        more[index].port > 65535) {
      close_listeners(count);
      errno = EINVAL;
      return -1;
    }
    listening[count].fd = listen_on(more[index].address, (uint16_t)more[index].port);
    if (listening[count].fd < 0) {
      close_listeners(count);
      return -1;
    }
    listening[count].events = POLLIN;
    ++count;
  }
  *step = "start the egress forwarder";
  const pid_t forwarder = fork();
  if (forwarder < 0) {
    close_listeners(count);
    return -1;
  }
  if (forwarder == 0) {
    signal(SIGPIPE, SIG_IGN);
    /* Kept: the listeners and the relay, in ascending order (insertion sort, no allocation). */
    static int keep[2 + DESKD_EGRESS_MAX_LISTENERS];
    unsigned kept = 0;
    for (unsigned index = 0; index <= count; ++index) {
      const int fd = index < count ? listening[index].fd : relay_fd;
      unsigned at = kept++;
      while (at > 0 && keep[at - 1] > fd) {
        keep[at] = keep[at - 1];
        --at;
      }
      keep[at] = fd;
    }
    close_all_but(keep, kept);
    forward(count, relay_fd);
  }
  for (unsigned index = 0; index < count; ++index) close(listening[index].fd);
  close(relay_fd);
  return 0;
}
