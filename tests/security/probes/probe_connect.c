// probe_connect tcp HOST PORT | unix PATH | abstract NAME | dgram-pair PATH | interfaces
// Tries to reach a listener outside the sandbox and prints "ok" or "errno <NAME>".
// "dgram-pair" takes the road around socket(AF_UNIX): a datagram socketpair, whose first
// socket then sendto()s PATH and is connect()ed to it; it prints the socketpair's outcome,
// and then one line each for sendto and connect+send when the pair was made.
// "interfaces" prints one line per network interface: "<name> up" or "<name> down".
// Every connect is bounded by a send timeout, so a black-holed address cannot hang a test.
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

static int report(int result) {
  if (result == 0)
    printf("ok\n");
  else
    printf("errno %s\n", strerrorname_np(errno));
  return 0;
}

static int bounded_socket(int family) {
  int fd = socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  struct timeval timeout = {3, 0};
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof timeout);
  return fd;
}

static int connect_tcp(const char* host, const char* port) {
  struct sockaddr_in address;
  memset(&address, 0, sizeof address);
  address.sin_family = AF_INET;
  address.sin_port = htons((unsigned short)atoi(port));
  if (inet_pton(AF_INET, host, &address.sin_addr) != 1) {
    fprintf(stderr, "probe_connect: bad address %s\n", host);
    return 2;
  }
  int fd = bounded_socket(AF_INET);
  if (fd < 0) return report(-1);
  return report(connect(fd, (struct sockaddr*)&address, sizeof address));
}

// abstract: the name goes after a leading NUL, in the network namespace's own table.
static int connect_unix(const char* name, int abstract) {
  struct sockaddr_un address;
  memset(&address, 0, sizeof address);
  address.sun_family = AF_UNIX;
  size_t length = strlen(name);
  if (length + 2 > sizeof address.sun_path) {
    fprintf(stderr, "probe_connect: name too long\n");
    return 2;
  }
  memcpy(address.sun_path + (abstract ? 1 : 0), name, length);
  socklen_t size = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + length + (abstract ? 1 : 0));
  int fd = bounded_socket(AF_UNIX);
  if (fd < 0) return report(-1);
  return report(connect(fd, (struct sockaddr*)&address, size));
}

static int datagram_pair_to(const char* path) {
  struct sockaddr_un address;
  memset(&address, 0, sizeof address);
  address.sun_family = AF_UNIX;
  if (strlen(path) + 1 > sizeof address.sun_path) {
    fprintf(stderr, "probe_connect: name too long\n");
    return 2;
  }
  strcpy(address.sun_path, path);
  int pair[2];
  if (socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, pair) != 0) return report(-1);
  report(0);
  static const char message[] = "deskd-datagram-escaped";
  long sent = sendto(pair[0], message, sizeof message - 1, MSG_DONTWAIT, (struct sockaddr*)&address,
                     sizeof address);
  report(sent < 0 ? -1 : 0);
  int connected = connect(pair[0], (struct sockaddr*)&address, sizeof address);
  if (connected == 0) connected = send(pair[0], message, sizeof message - 1, MSG_DONTWAIT) < 0 ? -1 : 0;
  return report(connected);
}

static int list_interfaces(void) {
  struct if_nameindex* interfaces = if_nameindex();
  if (interfaces == NULL) return report(-1);
  int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  for (struct if_nameindex* each = interfaces; each->if_index != 0; ++each) {
    struct ifreq request;
    memset(&request, 0, sizeof request);
    strncpy(request.ifr_name, each->if_name, IFNAMSIZ - 1);
    int up = fd >= 0 && ioctl(fd, SIOCGIFFLAGS, &request) == 0 && (request.ifr_flags & IFF_UP);
    printf("%s %s\n", each->if_name, up ? "up" : "down");
  }
  if_freenameindex(interfaces);
  return 0;
}

int main(int argc, char** argv) {
  if (argc == 4 && strcmp(argv[1], "tcp") == 0) return connect_tcp(argv[2], argv[3]);
  if (argc == 3 && strcmp(argv[1], "unix") == 0) return connect_unix(argv[2], 0);
  if (argc == 3 && strcmp(argv[1], "abstract") == 0) return connect_unix(argv[2], 1);
  if (argc == 3 && strcmp(argv[1], "dgram-pair") == 0) return datagram_pair_to(argv[2]);
  if (argc == 2 && strcmp(argv[1], "interfaces") == 0) return list_interfaces();
  fprintf(stderr,
          "usage: probe_connect tcp HOST PORT | unix PATH | abstract NAME | dgram-pair PATH | "
          "interfaces\n");
  return 2;
}
