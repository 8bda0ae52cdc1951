/* What deskd's launcher and deskd-init, the sandbox's pid 1, agree on. Plain C: the init is
 * a small static C program, exec'd fresh inside the sandbox so that no process a desk can
 * see was ever a copy of deskd's memory.
 *
 * The launcher's cloned child builds the sandbox, then executes the init (from a sealed
 * memfd) with an empty environment and argv = { "deskd-init", SPEC_FD, REPORT_FD }:
 *   SPEC_FD    a memfd holding a deskd_init_header and its strings; the init reads and closes it
 *   REPORT_FD  the launcher's failure pipe: a deskd_child_failure record if the command cannot
 *              be executed; it closes without one once the command runs
 * Descriptors below SPEC_FD are the command's (0, 1, 2, and any extra ones).
 *
 * Mode "run": the init forks, its child executes the command, and the init stays behind as
 * pid 1: it forwards termination signals, reaps orphans and exits with the command's status.
 * With an egress relay (network "allowlist") it first starts the egress forwarder, a child
 * of its own that the command cannot reach (egress_forwarder.h).
 * Mode "files": the init is the desk's file opener: it answers deskd_file_request messages on
 * descriptor 0 (a SOCK_SEQPACKET socket) with one system call each, made with the desk's
 * identity, mounts, landlock and seccomp, and hands opened descriptors back (SCM_RIGHTS). */
#ifndef DESKD_SANDBOX_INIT_PROTOCOL_H
#define DESKD_SANDBOX_INIT_PROTOCOL_H

#include <stdint.h>
#include <sys/stat.h>

#define DESKD_INIT_MAGIC 0x494b5344u /* "DSKI" */

enum deskd_init_mode { DESKD_INIT_RUN = 1, DESKD_INIT_FILES = 2 };

/* Followed by `bytes` bytes of NUL-terminated strings: the executable candidates (absolute
 * paths to try in order), then argv, then the environment (NAME=value); then
 * `egress_listeners` deskd_egress_listener records. */
struct deskd_init_header {
  uint32_t magic;
  uint32_t mode;
  uint32_t candidates;
  uint32_t arguments;
  uint32_t variables;
  uint32_t bytes;
  /* Mode "run" with network "allowlist": the descriptor of the relay to deskd's egress proxy
   * (one of the command's descriptors, which the command does not get), and the loopback
   * port the forwarder listens on (egress_forwarder.h). -1 and 0 otherwise. */
  int32_t egress_relay_fd;
  uint32_t egress_port;
  /* With the relay: how many more addresses the forwarder listens on, one per allowed
   * name and port (policy/egress_names.h); at most DESKD_EGRESS_MAX_LISTENERS. */
  uint32_t egress_listeners;
};

/* One more place the forwarder listens on: a loopback address in network byte order, and a
 * port. deskd tells the connections apart by their local address (getsockname). */
struct deskd_egress_listener {
  uint32_t address;
  uint32_t port;
};

#define DESKD_EGRESS_MAX_LISTENERS 256u

/* The largest spec the init accepts, so that a broken one cannot make it allocate without
 * bound: argv and the environment together, as the kernel's own ARG_MAX-ish limit. */
#define DESKD_INIT_MAX_SPEC_BYTES (4u << 20)

/* What a failed step reports to the launcher; the launcher's ChildFailure has this layout. */
struct deskd_child_failure {
  int error_number;
  int exit_status; /* 125 setup, 126 not executable, 127 not found */
  char step[160];
  char path[512];
};

/* ---- the file opener ("files" mode) ---- */

enum deskd_file_operation {
  DESKD_FILE_OPEN = 1,   /* openat2(dir, path, flags, mode, resolve), or openat when resolve is 0 */
  DESKD_FILE_MKDIR = 2,  /* mkdirat(dir, path, mode) */
  DESKD_FILE_RENAME = 3, /* renameat(dir, path, dir, second_path) */
  DESKD_FILE_UNLINK = 4, /* unlinkat(dir, path, flags) */
  DESKD_FILE_STAT = 5,   /* fstatat(dir, path, &status, flags) */
  DESKD_FILE_READLINK = 6 /* readlinkat(dir, path, link, sizeof link): the reply's result is its length */
};

#define DESKD_FILE_PATH_BYTES 4096

/* One request; `dir` is the descriptor sent with it (SCM_RIGHTS) when has_directory is 1,
 * otherwise AT_FDCWD. Paths are NUL-terminated within their arrays. */
struct deskd_file_request {
  uint32_t operation;
  int32_t flags;
  uint32_t mode;
  uint32_t has_directory;
  uint64_t resolve;
  char path[DESKD_FILE_PATH_BYTES];
  char second_path[DESKD_FILE_PATH_BYTES];
};

/* The answer: result >= 0 or -1 with error_number. An opened descriptor travels with it. */
struct deskd_file_reply {
  int32_t result;
  int32_t error_number;
  struct stat status; /* DESKD_FILE_STAT only */
  char link[DESKD_FILE_PATH_BYTES]; /* DESKD_FILE_READLINK only: the target, `result` bytes */
};

#endif
