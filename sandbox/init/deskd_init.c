/* deskd-init: pid 1 of every deskd sandbox, and the desk's file opener.
 *
 * It is exec'd fresh by the launcher's child once the sandbox is built (namespaces, mounts,
 * ids, landlock, seccomp), with an empty environment, so nothing of deskd's memory — API
 * keys, other desks' sessions, the config — exists in any process a desk can see. It marks
 * itself non-dumpable at once: a desk's processes run as the same uid, and /proc/1/mem,
 * /proc/1/environ and ptrace are then closed to them. The protocol is in init_protocol.h.
 *
 * Statically linked and built without deskd's sanitizers, so that it needs nothing from the
 * sandbox's file system and fits under the sandbox's memory limits. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "egress_forwarder.h"
#include "init_protocol.h"

static volatile pid_t command_pid = 0;

static void copy_text(char *destination, size_t size, const char *text) {
  size_t index = 0;
  if (text != NULL) {
    for (; index + 1 < size && text[index] != '\0'; ++index) destination[index] = text[index];
  }
  destination[index] = '\0';
}

static void report(int report_fd, int error_number, const char *step, const char *path, int status) {
  struct deskd_child_failure failure;
  memset(&failure, 0, sizeof failure);
  failure.error_number = error_number;
  failure.exit_status = status;
  copy_text(failure.step, sizeof failure.step, step);
  copy_text(failure.path, sizeof failure.path, path);
  if (report_fd >= 0) {
    ssize_t written = write(report_fd, &failure, sizeof failure);
    (void)written; /* nobody to tell if the launcher is gone */
  }
}

static _Noreturn void fail(int report_fd, int error_number, const char *step, int status) {
  report(report_fd, error_number, step, "", status);
  _exit(status);
}

static int parse_descriptor(const char *text) {
  if (text == NULL || *text == '\0') return -1;
  long value = 0;
  for (const char *c = text; *c != '\0'; ++c) {
    if (*c < '0' || *c > '9' || value > 65536) return -1;
    value = value * 10 + (*c - '0');
  }
  return (int)value;
}

/* The spec: the header and its strings, checked so that every string ends inside it. */
struct spec {
  struct deskd_init_header header;
  char **candidates;
  char **arguments;
  char **variables;
  struct deskd_egress_listener listeners[DESKD_EGRESS_MAX_LISTENERS];
};

static char **take_strings(char **cursor, const char *end, uint32_t count) {
  char **list = calloc((size_t)count + 1, sizeof *list);
  if (list == NULL) return NULL;
  for (uint32_t index = 0; index < count; ++index) {
    char *start = *cursor;
    char *terminator = memchr(start, '\0', (size_t)(end - start));
    if (terminator == NULL) return NULL;
    list[index] = start;
    *cursor = terminator + 1;
  }
  return list;
}

static int read_spec(int fd, struct spec *spec) {
  if (pread(fd, &spec->header, sizeof spec->header, 0) != (ssize_t)sizeof spec->header) return -1;
  const struct deskd_init_header *h = &spec->header;
  if (h->magic != DESKD_INIT_MAGIC || h->bytes > DESKD_INIT_MAX_SPEC_BYTES) {
    errno = EINVAL;
    return -1;
  }
  char *bytes = malloc((size_t)h->bytes + 1);
  if (bytes == NULL) return -1;
  size_t done = 0;
  while (done < h->bytes) {
    ssize_t got = pread(fd, bytes + done, h->bytes - done, (off_t)(sizeof *h + done));
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) {
      errno = got == 0 ? EINVAL : errno;
      return -1;
    }
    done += (size_t)got;
  }
  bytes[h->bytes] = '\0';
  char *cursor = bytes;
  const char *end = bytes + h->bytes;
  spec->candidates = take_strings(&cursor, end, h->candidates);
  spec->arguments = spec->candidates ? take_strings(&cursor, end, h->arguments) : NULL;
  spec->variables = spec->arguments ? take_strings(&cursor, end, h->variables) : NULL;
  if (spec->variables == NULL || (h->mode == DESKD_INIT_RUN && h->arguments == 0) ||
      h->egress_listeners > DESKD_EGRESS_MAX_LISTENERS) {
    errno = EINVAL;
    return -1;
  }
  const size_t listener_bytes = (size_t)h->egress_listeners * sizeof spec->listeners[0];
  if (listener_bytes > 0 &&
      pread(fd, spec->listeners, listener_bytes, (off_t)(sizeof *h + h->bytes)) != (ssize_t)listener_bytes) {
    errno = EINVAL;
    return -1;
  }
  return 0;
}

static void forward_signal(int signal_number) {
  if (command_pid > 0) kill(command_pid, signal_number);
}

/* The signals this process ignores (SigIgn in /proc/self/status, hexadecimal), or every
 * signal when that cannot be read. */
static uint64_t ignored_signals(void) {
  const uint64_t all = ~(uint64_t)0;
  char text[4096];
  const int fd = openat(AT_FDCWD, "/proc/self/status", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return all;
  const ssize_t got = pread(fd, text, sizeof text - 1, 0);
  close(fd);
  if (got <= 0) return all;
  text[got] = '\0';
  static const char key[] = "\nSigIgn:\t";
  const char *found = NULL;
  for (const char *c = text; *c != '\0' && found == NULL; ++c) {
    if (memcmp(c, key, sizeof key - 1) == 0) found = c + sizeof key - 1;
  }
  if (found == NULL) return all;
  uint64_t mask = 0;
  int digits = 0;
  for (; digits < 16; ++digits, ++found) {
    const char c = *found;
    const int value = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
    if (value < 0) break;
    mask = (mask << 4) | (uint64_t)value;
  }
  return digits == 16 ? mask : all;
}

static _Noreturn void execute_command(const struct spec *spec, int report_fd) {
  /* The command starts with every signal at its default. exec resets the caught ones by
   * itself (the init catches none before this fork); only ignored ones (a daemon's SIGPIPE)
   * would survive it, so only those are reset: one sigaction per signal was 64 system calls
   * on every launch. */
  struct sigaction default_action;
  memset(&default_action, 0, sizeof default_action);
  default_action.sa_handler = SIG_DFL;
  const uint64_t ignored = ignored_signals();
  for (int signal_number = 1; signal_number < NSIG && signal_number <= 64; ++signal_number) {
    if ((ignored >> (signal_number - 1)) & 1) {
      sigaction(signal_number, &default_action, NULL); /* fails harmlessly for KILL and STOP */
    }
  }
  int last_error = ENOENT;
  for (char **candidate = spec->candidates; *candidate != NULL; ++candidate) {
    execve(*candidate, spec->arguments, spec->variables);
    /* Like a shell: keep looking after "not found", remember "not executable". */
    if (errno != ENOENT && errno != ENOTDIR) last_error = errno;
  }
  report(report_fd, last_error, "execute the command", spec->arguments[0], last_error == ENOENT ? 127 : 126);
  _exit(last_error == ENOENT ? 127 : 126);
}

static _Noreturn void run(const struct spec *spec, int report_fd) {
  /* The desk's proxy listens before the command starts, so its first request finds it. */
  if (spec->header.egress_relay_fd >= 0) {
    const char *step = "start the egress forwarder";
    if (spec->header.egress_port == 0 || spec->header.egress_port > 65535 ||
        deskd_start_egress_forwarder(spec->header.egress_relay_fd, (uint16_t)spec->header.egress_port,
                                     spec->listeners, spec->header.egress_listeners, &step) != 0) {
      fail(report_fd, errno, step, 125);
    }
  }
  /* The command's child closes the report pipe by executing; the init must not hold it. */
  if (fcntl(report_fd, F_SETFD, FD_CLOEXEC) != 0) fail(report_fd, errno, "mark the report pipe", 125);
  sigset_t all;
  sigfillset(&all);
  sigprocmask(SIG_SETMASK, &all, NULL); /* no forwarded signal before command_pid is known */
  const pid_t command = fork();
  if (command < 0) fail(report_fd, errno, "start the command", 125);
  if (command == 0) {
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    execute_command(spec, report_fd);
  }
  /* Holding the command's pipes would keep them open after its death. */
  syscall(SYS_close_range, 0U, UINT_MAX, 0U);
  command_pid = command;
  struct sigaction forward;
  memset(&forward, 0, sizeof forward);
  forward.sa_handler = forward_signal;
  sigemptyset(&forward.sa_mask);
  const int forwarded[] = {SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2};
  for (size_t index = 0; index < sizeof forwarded / sizeof forwarded[0]; ++index) {
    sigaction(forwarded[index], &forward, NULL);
  }
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, NULL);
  for (;;) {
    int status = 0;
    const pid_t reaped = waitpid(-1, &status, 0);
    if (reaped < 0) {
      if (errno == EINTR) continue;
      _exit(125); /* ECHILD: the command is gone without being seen; cannot happen */
    }
    if (reaped != command) continue; /* an orphan, reaped */
    if (WIFEXITED(status)) _exit(WEXITSTATUS(status));
    _exit(128 + WTERMSIG(status));
  }
}

/* ---- the file opener ---- */

static long answer(const struct deskd_file_request *request, int directory, struct deskd_file_reply *reply) {
  const char *path = request->path;
  switch (request->operation) {
    case DESKD_FILE_OPEN: {
      if (request->resolve == 0) return openat(directory, path, request->flags | O_CLOEXEC, request->mode);
      struct open_how how;
      memset(&how, 0, sizeof how);
      how.flags = (uint64_t)(unsigned)request->flags | O_CLOEXEC;
      how.mode = (request->flags & (O_CREAT | O_TMPFILE)) != 0 ? request->mode : 0;
      how.resolve = request->resolve;
      return syscall(SYS_openat2, directory, path, &how, sizeof how);
    }
    case DESKD_FILE_MKDIR:
      return mkdirat(directory, path, request->mode);
    case DESKD_FILE_RENAME:
      return renameat(directory, path, directory, request->second_path);
    case DESKD_FILE_UNLINK:
      return unlinkat(directory, path, request->flags);
    case DESKD_FILE_STAT:
      return fstatat(directory, path, &reply->status, request->flags);
    case DESKD_FILE_READLINK:
      return readlinkat(directory, path, reply->link, sizeof reply->link);
    default:
      errno = EINVAL;
      return -1;
  }
}

static int send_reply(const struct deskd_file_reply *reply, int descriptor) {
  struct iovec part = {(void *)reply, sizeof *reply};
  union {
    char bytes[CMSG_SPACE(sizeof(int))];
    struct cmsghdr align;
  } control;
  struct msghdr message;
  memset(&message, 0, sizeof message);
  message.msg_iov = &part;
  message.msg_iovlen = 1;
  if (descriptor >= 0) {
    memset(&control, 0, sizeof control);
    message.msg_control = control.bytes;
    message.msg_controllen = sizeof control.bytes;
    struct cmsghdr *header = CMSG_FIRSTHDR(&message);
    header->cmsg_level = SOL_SOCKET;
    header->cmsg_type = SCM_RIGHTS;
    header->cmsg_len = CMSG_LEN(sizeof(int));
    memcpy(CMSG_DATA(header), &descriptor, sizeof(int));
  }
  ssize_t sent;
  do {
    sent = sendmsg(0, &message, MSG_NOSIGNAL);
  } while (sent < 0 && errno == EINTR);
  return sent == (ssize_t)sizeof *reply ? 0 : -1;
}

static _Noreturn void serve_files(void) {
  /* Descriptors 1 and 2 are closed; nothing is printed, every answer goes on the socket. */
  static struct deskd_file_request request;
  for (;;) {
    union {
      char bytes[CMSG_SPACE(sizeof(int))];
      struct cmsghdr align;
    } control;
    struct iovec part = {&request, sizeof request};
    struct msghdr message;
    memset(&message, 0, sizeof message);
    message.msg_iov = &part;
    message.msg_iovlen = 1;
    message.msg_control = control.bytes;
    message.msg_controllen = sizeof control.bytes;
    ssize_t got;
    do {
      got = recvmsg(0, &message, MSG_CMSG_CLOEXEC);
    } while (got < 0 && errno == EINTR);
    if (got <= 0) _exit(0); /* deskd closed its end: the desk stopped */
    int directory = AT_FDCWD;
    int received = -1;
    struct cmsghdr *header = CMSG_FIRSTHDR(&message);
    if (header != NULL && header->cmsg_level == SOL_SOCKET && header->cmsg_type == SCM_RIGHTS &&
        header->cmsg_len == CMSG_LEN(sizeof(int))) {
      memcpy(&received, CMSG_DATA(header), sizeof(int));
    }
    struct deskd_file_reply reply;
    memset(&reply, 0, sizeof reply);
    const int well_formed = got == (ssize_t)sizeof request && (message.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) == 0 &&
                            memchr(request.path, '\0', sizeof request.path) != NULL &&
                            memchr(request.second_path, '\0', sizeof request.second_path) != NULL &&
                            (request.has_directory != 0) == (received >= 0);
    long result = -1;
    if (!well_formed) {
      errno = EINVAL;
    } else {
      if (received >= 0) directory = received;
      result = answer(&request, directory, &reply);
    }
    reply.result = result < 0 ? -1 : (request.operation == DESKD_FILE_OPEN ? 0 : (int32_t)result);
    reply.error_number = result < 0 ? errno : 0;
    if (received >= 0) close(received);
    const int opened = well_formed && request.operation == DESKD_FILE_OPEN && result >= 0 ? (int)result : -1;
    const int sent = send_reply(&reply, opened);
    if (opened >= 0) close(opened);
    if (sent != 0) _exit(0);
  }
}

int main(int argc, char **argv) {
  /* First: from here on no process of the desk may read this one's memory or environment. */
  const int not_dumpable = prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
  const int report_fd = argc == 3 ? parse_descriptor(argv[2]) : -1;
  const int spec_fd = argc == 3 ? parse_descriptor(argv[1]) : -1;
  if (spec_fd < 0 || report_fd < 0) fail(report_fd, EINVAL, "start deskd-init (bad arguments)", 125);
  /* The egress relay and the spec stay the init's only while it is not dumpable: fail closed. */
  if (not_dumpable != 0) fail(report_fd, errno, "make deskd-init not dumpable (prctl PR_SET_DUMPABLE)", 125);
  struct spec spec;
  memset(&spec, 0, sizeof spec);
  if (read_spec(spec_fd, &spec) != 0) fail(report_fd, errno, "read the init's spec", 125);
  close(spec_fd);
  if (spec.header.mode == DESKD_INIT_FILES) {
    close(report_fd); /* the opener runs nothing; the launcher learns it is up from this */
    /* It prints nothing either: without descriptors 1 and 2, /proc/self/fd/1 of a path the
     * desk asks to resolve names nothing, as for the desk's own missing descriptors. */
    close(1);
    close(2);
    serve_files();
  }
  if (spec.header.mode != DESKD_INIT_RUN) fail(report_fd, EINVAL, "start deskd-init (unknown mode)", 125);
  run(&spec, report_fd);
}
