// probe_ids — reports who the probe is and what it holds, one fact a line:
//   the Uid/Gid/Groups/Cap*/NoNewPrivs/Seccomp lines of /proc/self/status, as they are;
//   "fds 0 1 2"        the open fds (without the one used to list them);
//   "pid N", "sid N"   its pid and session id (0: the session leader is outside this pid
//                      namespace);
//   "pids 1 2 ..."     every process /proc shows;
//   "cwd PATH", "hostname NAME".
#define _GNU_SOURCE
#include <ctype.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

static const char* const kStatusPrefixes[] = {
    "Uid:", "Gid:", "Groups:", "CapInh:", "CapPrm:", "CapEff:", "CapBnd:", "CapAmb:",
    "NoNewPrivs:", "Seccomp:",
};

static void print_status_lines(void) {
  FILE* status = fopen("/proc/self/status", "re");
  if (status == NULL) {
    printf("status unreadable\n");
    return;
  }
  char line[512];
  while (fgets(line, sizeof line, status) != NULL) {
    for (size_t i = 0; i < sizeof kStatusPrefixes / sizeof kStatusPrefixes[0]; ++i) {
      if (strncmp(line, kStatusPrefixes[i], strlen(kStatusPrefixes[i])) == 0) fputs(line, stdout);
    }
  }
  fclose(status);
}

static int is_number(const char* text) {
  if (*text == '\0') return 0;
  for (; *text != '\0'; ++text)
    if (!isdigit((unsigned char)*text)) return 0;
  return 1;
}

// Prints the numeric entries of a folder; skip_fd is the listing's own fd, when it shows.
static void print_numeric_entries(const char* label, const char* path, int skip_own_fd) {
  DIR* folder = opendir(path);
  if (folder == NULL) {
    printf("%s unreadable\n", label);
    return;
  }
  printf("%s", label);
  struct dirent* entry;
  while ((entry = readdir(folder)) != NULL) {
    if (!is_number(entry->d_name)) continue;
    if (skip_own_fd && atoi(entry->d_name) == dirfd(folder)) continue;
    printf(" %s", entry->d_name);
  }
  printf("\n");
  closedir(folder);
}

int main(void) {
  print_status_lines();
  print_numeric_entries("fds", "/proc/self/fd", 1);
  printf("pid %d\n", (int)getpid());
  printf("sid %d\n", (int)getsid(0));
  print_numeric_entries("pids", "/proc", 0);
  char cwd[4096];
  printf("cwd %s\n", getcwd(cwd, sizeof cwd) != NULL ? cwd : "?");
  struct utsname names;
  printf("hostname %s\n", uname(&names) == 0 ? names.nodename : "?");
  return 0;
}
