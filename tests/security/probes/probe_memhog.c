// probe_memhog MAX_MIB — allocates and touches memory 64 MiB at a time up to MAX_MIB,
// printing "reached <MiB>" after each step (flushed, so the tests see how far it got even
// when the OOM killer ends it), then "done <MiB>" or "failed at <MiB> errno <NAME>".
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: probe_memhog MAX_MIB\n");
    return 2;
  }
  const size_t step = (size_t)64 << 20;
  long maximum = strtol(argv[1], NULL, 10);
  setvbuf(stdout, NULL, _IONBF, 0);
  long reached = 0;
  while (reached + 64 <= maximum) {
    // mmap rather than malloc: the probe must really fault the pages in, and a failure
    // must be an errno, not an abort inside the allocator.
    char* block = mmap(NULL, step, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (block == MAP_FAILED) {
      printf("failed at %ld errno %s\n", reached, strerrorname_np(errno));
      return 0;
    }
    memset(block, 0xa5, step);
    reached += 64;
    printf("reached %ld\n", reached);
  }
  printf("done %ld\n", reached);
  return 0;
}
