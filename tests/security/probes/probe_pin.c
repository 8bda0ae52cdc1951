// probe_pin WHERE MAX_MIB — holds memory that RLIMIT_AS does not count, 64 MiB at a time
// up to MAX_MIB, printing "held <MiB>" after each step (flushed: the tests see how far it got
// even when the OOM killer ends it), then "done <MiB>" or "failed at <MiB> errno <NAME>".
// WHERE is "memfd" (written, never mapped), "sysv" (a detached SysV segment per step, left
// without IPC_RMID) or a file path (e.g. /tmp/pin, /dev/shm/pin: tmpfs pages).
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ipc.h>
#include <sys/mman.h>
#include <sys/shm.h>
#include <unistd.h>

static int fail(long held) {
  printf("failed at %ld errno %s\n", held, strerrorname_np(errno));
  return 0;
}

int main(int argc, char** argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: probe_pin memfd|sysv|PATH MAX_MIB\n");
    return 2;
  }
  setvbuf(stdout, NULL, _IONBF, 0);
  const char* where = argv[1];
  const long maximum = strtol(argv[2], NULL, 10);
  const size_t step = (size_t)64 << 20;
  static char chunk[1 << 20];
  memset(chunk, 0xa5, sizeof chunk);
  int fd = -1;
  if (strcmp(where, "memfd") == 0) {
    fd = memfd_create("probe-pin", 0);
    if (fd < 0) return fail(0);
  } else if (strcmp(where, "sysv") != 0) {
    fd = open(where, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd < 0) return fail(0);
  }
  long held = 0;
  while (held + 64 <= maximum) {
    if (fd >= 0) {
      for (size_t written = 0; written < step; written += sizeof chunk) {
        if (write(fd, chunk, sizeof chunk) != (ssize_t)sizeof chunk) return fail(held);
      }
    } else {
      const int segment = shmget(IPC_PRIVATE, step, IPC_CREAT | 0600);
      if (segment < 0) return fail(held);
      char* mapped = shmat(segment, NULL, 0);
      if (mapped == (void*)-1) return fail(held);
      memset(mapped, 0xa5, step);
      shmdt(mapped);
    }
    held += 64;
    printf("held %ld\n", held);
  }
  printf("done %ld\n", held);
  return 0;
}
