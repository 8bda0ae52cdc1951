// probe_write PATH [BYTES]   — creates or truncates PATH and writes BYTES bytes to it
//                              (default: the line "deskd-probe-write");
// probe_write --mkdir PATH   — creates the folder PATH.
// Prints "ok <bytes>" or "errno <NAME>" (after a partial write: "errno <NAME> after <bytes>").
// SIGXFSZ keeps its default action, so a file-size limit may also end the probe by signal;
// the tests accept either and check the file on the host.
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char kLine[] = "deskd-probe-write\n";

static int report_errno(const char* step, const char* path, size_t written) {
  int saved = errno;
  fprintf(stderr, "probe_write: %s %s: %s\n", step, path, strerror(saved));
  if (written > 0)
    printf("errno %s after %zu\n", strerrorname_np(saved), written);
  else
    printf("errno %s\n", strerrorname_np(saved));
  return 0;
}

int main(int argc, char** argv) {
  if (argc == 3 && strcmp(argv[1], "--mkdir") == 0) {
    if (mkdir(argv[2], 0755) != 0) return report_errno("mkdir", argv[2], 0);
    printf("ok 0\n");
    return 0;
  }
  if (argc != 2 && argc != 3) {
    fprintf(stderr, "usage: probe_write PATH [BYTES] | probe_write --mkdir PATH\n");
    return 2;
  }
  const char* path = argv[1];
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return report_errno("open", path, 0);

  size_t wanted = argc == 3 ? strtoull(argv[2], NULL, 10) : sizeof kLine - 1;
  static char block[65536];
  if (argc == 3)
    memset(block, 'x', sizeof block);
  else
    memcpy(block, kLine, sizeof kLine - 1);
  size_t written = 0;
  while (written < wanted) {
    size_t chunk = wanted - written < sizeof block ? wanted - written : sizeof block;
    ssize_t done = write(fd, block, chunk);
    if (done < 0 && errno == EINTR) continue;
    if (done < 0) return report_errno("write", path, written);
    written += (size_t)done;
  }
  if (close(fd) != 0) return report_errno("close", path, written);
  printf("ok %zu\n", written);
  return 0;
}
