// probe_daemonize PIDFILE MARKER — escapes the way a daemon does: fork, setsid, ignore
// SIGHUP, fork again. The grandchild writes its pid to PIDFILE and sleeps 60 s; the probe
// itself waits until the pid file exists, prints "daemonized <pid>" and exits.
// MARKER is unused by the code: it sits in every copy's argv, so the tests find leftovers
// by scanning the host's /proc/*/cmdline for it (the pid in PIDFILE is a sandbox pid).
// The grandchild keeps stdout and stderr open on purpose: a survivor also shows up as a
// pipe that never closes.
#define _GNU_SOURCE
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static void write_pid_file(const char* path) {
  char text[32];
  int length = snprintf(text, sizeof text, "%d\n", (int)getpid());
  char temporary[4096];
  snprintf(temporary, sizeof temporary, "%s.tmp", path);
  int fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return;
  if (write(fd, text, (size_t)length) != length) return;
  close(fd);
  rename(temporary, path);  // atomic: the parent never reads a half-written file
}

int main(int argc, char** argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: probe_daemonize PIDFILE MARKER\n");
    return 2;
  }
  const char* pid_file = argv[1];
  pid_t child = fork();
  if (child < 0) return 1;
  if (child == 0) {
    setsid();
    signal(SIGHUP, SIG_IGN);
    pid_t grandchild = fork();
    if (grandchild != 0) _exit(grandchild < 0 ? 1 : 0);
    write_pid_file(pid_file);
    sleep(60);
    _exit(0);
  }
  waitpid(child, NULL, 0);
  for (int tries = 0; tries < 500; ++tries) {  // at most 5 s
    FILE* file = fopen(pid_file, "re");
    if (file != NULL) {
      int pid = 0;
      int parsed = fscanf(file, "%d", &pid);
      fclose(file);
      if (parsed == 1) {
        printf("daemonized %d\n", pid);
        return 0;
      }
    }
    struct timespec pause = {0, 10 * 1000 * 1000};
    nanosleep(&pause, NULL);
  }
  printf("no pid file\n");
  return 1;
}
