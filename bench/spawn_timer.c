// spawn_timer: runs one command once and prints how long it took, in milliseconds, from
// just before fork to just after waitpid returned (CLOCK_MONOTONIC): fork + exec + the
// command's whole life + reaping. bench/cold_start calls it once per sample.
//
// The command's stdout goes to /dev/null (opened before the clock starts) so that only the
// time reaches this program's stdout; its stderr is kept, for error messages. Exits 0 only
// when the command exited 0, so a broken command is never timed as if it worked.

#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char** argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: spawn_timer COMMAND [ARG]...\n");
    return 2;
  }
  const int devnull = open("/dev/null", O_WRONLY | O_CLOEXEC);
  if (devnull < 0) {
    perror("spawn_timer: /dev/null");
    return 1;
  }

  struct timespec start, end;
  clock_gettime(CLOCK_MONOTONIC, &start);
  const pid_t child = fork();
  if (child < 0) {
    perror("spawn_timer: fork");
    return 1;
  }
  if (child == 0) {
    dup2(devnull, STDOUT_FILENO);
    execvp(argv[1], argv + 1);
    fprintf(stderr, "spawn_timer: cannot run %s: %s\n", argv[1], strerror(errno));
    _exit(127);
  }
  int status = 0;
  while (waitpid(child, &status, 0) < 0) {
    if (errno != EINTR) {
      perror("spawn_timer: waitpid");
      return 1;
    }
  }
  clock_gettime(CLOCK_MONOTONIC, &end);

  if (WIFSIGNALED(status)) {
    fprintf(stderr, "spawn_timer: %s was killed by signal %d\n", argv[1], WTERMSIG(status));
    return 1;
  }
  if (WEXITSTATUS(status) != 0) {
    fprintf(stderr, "spawn_timer: %s exited with status %d\n", argv[1], WEXITSTATUS(status));
    return 1;
  }
  const double milliseconds =
      (double)(end.tv_sec - start.tv_sec) * 1e3 + (double)(end.tv_nsec - start.tv_nsec) / 1e6;
  printf("%.4f\n", milliseconds);
  return 0;
}
