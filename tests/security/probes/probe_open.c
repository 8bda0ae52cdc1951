// probe_open PATH — tries to read PATH from inside the sandbox and reports what it saw.
//   a file:   "ok <bytes>" then the first 64 KiB of it;
//   a folder: "ok <entries>" then one name a line;
//   refused:  "errno <NAME>" (the failing step goes to stderr).
// The tests look for the desk's secret anywhere in stdout, so the content is printed, not
// only counted: a probe that read the secret must not be able to hide it.
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int report_errno(const char* step, const char* path) {
  int saved = errno;
  fprintf(stderr, "probe_open: %s %s: %s\n", step, path, strerror(saved));
  printf("errno %s\n", strerrorname_np(saved));
  return 0;
}

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: probe_open PATH\n");
    return 2;
  }
  const char* path = argv[1];
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return report_errno("open", path);
  struct stat status;
  if (fstat(fd, &status) != 0) return report_errno("fstat", path);

  if (S_ISDIR(status.st_mode)) {
    DIR* folder = fdopendir(fd);
    if (folder == NULL) return report_errno("fdopendir", path);
    char names[65536];
    size_t used = 0;
    int entries = 0;
    errno = 0;
    struct dirent* entry;
    while ((entry = readdir(folder)) != NULL) {
      if (strcmp(entry->d_name, ".") == 0 || strcmp(entry->d_name, "..") == 0) continue;
      int written = snprintf(names + used, sizeof names - used, "%s\n", entry->d_name);
      if (written > 0 && (size_t)written < sizeof names - used) used += (size_t)written;
      ++entries;
    }
    if (errno != 0) return report_errno("readdir", path);
    printf("ok %d\n%.*s", entries, (int)used, names);
    return 0;
  }

  static char buffer[65536];
  size_t total = 0;
  for (;;) {
    ssize_t got = read(fd, buffer + total, sizeof buffer - total);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) return report_errno("read", path);
    if (got == 0 || total + (size_t)got == sizeof buffer) {
      total += (size_t)got;
      break;
    }
    total += (size_t)got;
  }
  printf("ok %zu\n", total);
  fwrite(buffer, 1, total, stdout);
  return 0;
}
