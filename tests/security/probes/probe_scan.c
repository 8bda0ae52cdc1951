// probe_scan HEX — looks for a canary in every other process the sandbox can see.
//
// The canary comes hex-encoded, so its raw bytes are in no command line; the probe decodes
// it into its own heap and skips its own pid. For every other pid in /proc it searches
// /proc/PID/cmdline, /proc/PID/environ and /proc/PID/mem (each readable range that
// /proc/PID/maps lists, read with pread; a range that answers EIO, EPERM, EACCES or EFAULT
// is skipped, the rest of the process still read), and prints one line a process:
//   pid=N comm=NAME cmdline=ok|found|denied environ=ok|found|denied mem=ok|found|denied bytes=M
// (M: bytes of memory read), then "found=K scanned=P" (K processes where the canary was
// found, of P scanned). Exit status 0 when it was found nowhere, 1 when it was found, 2 for
// bad usage. "denied": the kernel refused the file (or, for mem, every range of it).
// A process that ended during the scan is left out. Ranges above 4 GiB (a sanitizer's
// shadow memory, mostly reserved) are skipped with a note on stderr: reading them would take
// minutes and they hold no strings.
#define _GNU_SOURCE
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum outcome { OUTCOME_OK, OUTCOME_FOUND, OUTCOME_DENIED, OUTCOME_GONE };

static const char* const kOutcomeNames[] = {"ok", "found", "denied", "gone"};
static const unsigned long long kLargestRange = 4ULL << 30;
enum { kChunk = 1 << 20 };

static unsigned char* canary;
static size_t canary_length;

static int hex_value(int c) {
  if (c >= '0' && c <= '9') return c - '0';
  c = tolower(c);
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

static int decode_canary(const char* hex) {
  size_t length = strlen(hex);
  if (length < 8 || length % 2 != 0) return -1;
  canary_length = length / 2;
  canary = malloc(canary_length);
  if (canary == NULL) return -1;
  for (size_t i = 0; i < canary_length; ++i) {
    int high = hex_value(hex[2 * i]);
    int low = hex_value(hex[2 * i + 1]);
    if (high < 0 || low < 0) return -1;
    canary[i] = (unsigned char)(high * 16 + low);
  }
  return 0;
}

static enum outcome outcome_of_errno(int error) {
  return error == ENOENT || error == ESRCH ? OUTCOME_GONE : OUTCOME_DENIED;
}

// Reads all of a small /proc file (cmdline, environ) and searches it.
static enum outcome scan_file(const char* path) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return outcome_of_errno(errno);
  size_t size = 0;
  size_t capacity = 65536;
  unsigned char* text = malloc(capacity);
  if (text == NULL) {
    close(fd);
    return OUTCOME_DENIED;
  }
  for (;;) {
    if (size == capacity) {
      unsigned char* larger = realloc(text, capacity * 2);
      if (larger == NULL) break;
      text = larger;
      capacity *= 2;
    }
    ssize_t got = read(fd, text + size, capacity - size);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) {
      int error = errno;
      free(text);
      close(fd);
      return outcome_of_errno(error);
    }
    if (got == 0) break;
    size += (size_t)got;
  }
  close(fd);
  enum outcome result = memmem(text, size, canary, canary_length) != NULL ? OUTCOME_FOUND : OUTCOME_OK;
  free(text);
  return result;
}

// Reads one range of the process's memory in chunks, each beginning with the last
// canary_length-1 bytes of the one before, so a canary across a chunk border is seen too.
static int scan_range(int mem, unsigned long long start, unsigned long long end, unsigned char* buffer,
                      unsigned long long* bytes) {
  size_t carried = 0;
  for (unsigned long long offset = start; offset < end;) {
    size_t wanted = end - offset < kChunk ? (size_t)(end - offset) : kChunk;
    ssize_t got = pread(mem, buffer + carried, wanted, (off_t)offset);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return 0;  // EIO, EPERM, EACCES, EFAULT: the rest of this range is out of reach
    *bytes += (unsigned long long)got;
    size_t filled = carried + (size_t)got;
    if (memmem(buffer, filled, canary, canary_length) != NULL) return 1;
    carried = filled < canary_length - 1 ? filled : canary_length - 1;
    memmove(buffer, buffer + filled - carried, carried);
    offset += (unsigned long long)got;
  }
  return 0;
}

static enum outcome scan_memory(int pid, unsigned long long* bytes) {
  char path[64];
  snprintf(path, sizeof path, "/proc/%d/mem", pid);
  int mem = open(path, O_RDONLY | O_CLOEXEC);
  if (mem < 0) return outcome_of_errno(errno);
  snprintf(path, sizeof path, "/proc/%d/maps", pid);
  FILE* maps = fopen(path, "re");
  if (maps == NULL) {
    int error = errno;
    close(mem);
    return outcome_of_errno(error);
  }
  unsigned char* buffer = malloc(kChunk + canary_length);
  int found = 0;
  char line[4096];
  while (buffer != NULL && !found && fgets(line, sizeof line, maps) != NULL) {
    unsigned long long start = 0;
    unsigned long long end = 0;
    char permissions[8] = "";
    if (sscanf(line, "%llx-%llx %7s", &start, &end, permissions) != 3 || permissions[0] != 'r') continue;
    if (end - start > kLargestRange) {
      fprintf(stderr, "probe_scan: pid %d: skipped %llx-%llx, larger than 4 GiB\n", pid, start, end);
      continue;
    }
    found = scan_range(mem, start, end, buffer, bytes);
  }
  free(buffer);
  fclose(maps);
  close(mem);
  if (found) return OUTCOME_FOUND;
  return *bytes == 0 ? OUTCOME_DENIED : OUTCOME_OK;
}

static void read_comm(int pid, char* comm, size_t size) {
  char path[64];
  snprintf(path, sizeof path, "/proc/%d/comm", pid);
  snprintf(comm, size, "?");
  FILE* file = fopen(path, "re");
  if (file == NULL) return;
  if (fgets(comm, (int)size, file) == NULL) snprintf(comm, size, "?");
  fclose(file);
  comm[strcspn(comm, "\n")] = '\0';
  for (char* c = comm; *c != '\0'; ++c)
    if (isspace((unsigned char)*c)) *c = '_';
}

static int is_number(const char* text) {
  if (*text == '\0') return 0;
  for (; *text != '\0'; ++text)
    if (!isdigit((unsigned char)*text)) return 0;
  return 1;
}

int main(int argc, char** argv) {
  if (argc != 2 || decode_canary(argv[1]) != 0) {
    fprintf(stderr, "usage: probe_scan HEX   (the canary, hex-encoded, at least 4 bytes)\n");
    return 2;
  }
  const int own = (int)getpid();
  DIR* proc = opendir("/proc");
  if (proc == NULL) {
    perror("probe_scan: /proc");
    return 2;
  }
  int found = 0;
  int scanned = 0;
  struct dirent* entry;
  while ((entry = readdir(proc)) != NULL) {
    if (!is_number(entry->d_name)) continue;
    const int pid = atoi(entry->d_name);
    if (pid == own) continue;
    char comm[64];
    read_comm(pid, comm, sizeof comm);
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/cmdline", pid);
    enum outcome command_line = scan_file(path);
    snprintf(path, sizeof path, "/proc/%d/environ", pid);
    enum outcome environment = scan_file(path);
    unsigned long long bytes = 0;
    enum outcome memory = scan_memory(pid, &bytes);
    if (command_line == OUTCOME_GONE || environment == OUTCOME_GONE || memory == OUTCOME_GONE) continue;
    ++scanned;
    if (command_line == OUTCOME_FOUND || environment == OUTCOME_FOUND || memory == OUTCOME_FOUND) ++found;
    printf("pid=%d comm=%s cmdline=%s environ=%s mem=%s bytes=%llu\n", pid, comm, kOutcomeNames[command_line],
           kOutcomeNames[environment], kOutcomeNames[memory], bytes);
  }
  closedir(proc);
  printf("found=%d scanned=%d\n", found, scanned);
  return found == 0 ? 0 : 1;
}
