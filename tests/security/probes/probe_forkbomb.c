// probe_forkbomb MAX — forks until fork fails or MAX children exist, prints
// "forked <N> errno <NAME>" (or "forked <N> limit" when MAX was reached), then exits.
// Bounded on purpose: even in a broken sandbox it cannot take the host down. Each child
// blocks reading a pipe whose write end only the parent holds, so the children leave as
// soon as the parent exits; alarm() is the backstop if something keeps the pipe open.
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: probe_forkbomb MAX\n");
    return 2;
  }
  long maximum = strtol(argv[1], NULL, 10);
  int hold[2];
  if (pipe(hold) != 0) {
    printf("errno %s\n", strerrorname_np(errno));
    return 0;
  }
  long forked = 0;
  int fork_errno = 0;
  while (forked < maximum) {
    pid_t child = fork();
    if (child < 0) {
      fork_errno = errno;
      break;
    }
    if (child == 0) {
      close(hold[1]);
      alarm(30);
      char byte;
      while (read(hold[0], &byte, 1) < 0 && errno == EINTR) {
      }
      _exit(0);
    }
    ++forked;
  }
  if (fork_errno != 0)
    printf("forked %ld errno %s\n", forked, strerrorname_np(fork_errno));
  else
    printf("forked %ld limit\n", forked);
  return 0;
}
