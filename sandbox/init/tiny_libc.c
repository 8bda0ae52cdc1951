/* The few C library functions deskd-init uses, as raw system calls, and its _start: on
 * x86_64 and aarch64 the init is linked with this file instead of glibc (-nostdlib), so
 * that starting it costs its exec and nothing else — no static glibc start (IRELATIVE
 * relocations, TLS, stdio), and an image of a few KiB instead of ~700 KiB to copy into its
 * memfd and map. Other architectures build the init against static glibc as before
 * (sandbox/CMakeLists.txt), with the same sources.
 *
 * glibc's headers still give the types, constants and prototypes, so deskd_init.c and
 * egress_forwarder.c compile unchanged; every function here keeps glibc's contract
 * (-1 and errno on failure). The init is single-threaded and its only signal handler
 * touches no errno, so errno is one plain variable. It must be built without a stack
 * protector (there is no TLS for the canary) and without _FORTIFY_SOURCE. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#if !defined(__x86_64__) && !defined(__aarch64__)
#error "tiny_libc.c is for x86_64 and aarch64; other architectures link deskd-init with glibc"
#endif

static int error_number;

int *__errno_location(void) { return &error_number; }

/* ---- system calls ---- */

static long raw6(long number, long a, long b, long c, long d, long e, long f) {
#if defined(__x86_64__)
  register long r10 __asm__("r10") = d;
  register long r8 __asm__("r8") = e;
  register long r9 __asm__("r9") = f;
  long result;
  __asm__ volatile("syscall"
                   : "=a"(result)
                   : "a"(number), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8), "r"(r9)
                   : "rcx", "r11", "memory");
  return result;
#else
  register long x8 __asm__("x8") = number;
  register long x0 __asm__("x0") = a;
  register long x1 __asm__("x1") = b;
  register long x2 __asm__("x2") = c;
  register long x3 __asm__("x3") = d;
  register long x4 __asm__("x4") = e;
  register long x5 __asm__("x5") = f;
  __asm__ volatile("svc 0" : "+r"(x0) : "r"(x8), "r"(x1), "r"(x2), "r"(x3), "r"(x4), "r"(x5) : "memory");
  return x0;
#endif
}

/* The kernel's -4095..-1 become -1 and errno, as glibc does. */
static long checked(long result) {
  if ((unsigned long)result > -4096UL) {
    error_number = (int)-result;
    return -1;
  }
  return result;
}

#define CALL(number, a, b, c, d, e, f) \
  checked(raw6((number), (long)(a), (long)(b), (long)(c), (long)(d), (long)(e), (long)(f)))

long syscall(long number, ...) {
  va_list list;
  va_start(list, number);
  long a = va_arg(list, long), b = va_arg(list, long), c = va_arg(list, long);
  long d = va_arg(list, long), e = va_arg(list, long), f = va_arg(list, long);
  va_end(list);
  return CALL(number, a, b, c, d, e, f);
}

void _exit(int status) {
  for (;;) raw6(SYS_exit_group, status, 0, 0, 0, 0, 0);
}

ssize_t write(int fd, const void *bytes, size_t count) { return CALL(SYS_write, fd, bytes, count, 0, 0, 0); }
ssize_t pread(int fd, void *bytes, size_t count, off_t offset) {
  return CALL(SYS_pread64, fd, bytes, count, offset, 0, 0);
}
int close(int fd) { return (int)CALL(SYS_close, fd, 0, 0, 0, 0, 0); }

int fcntl(int fd, int command, ...) {
  va_list list;
  va_start(list, command);
  long argument = va_arg(list, long);
  va_end(list);
  return (int)CALL(SYS_fcntl, fd, command, argument, 0, 0, 0);
}

int prctl(int option, ...) {
  va_list list;
  va_start(list, option);
  long a = va_arg(list, long), b = va_arg(list, long), c = va_arg(list, long), d = va_arg(list, long);
  va_end(list);
  return (int)CALL(SYS_prctl, option, a, b, c, d, 0);
}

int execve(const char *path, char *const arguments[], char *const environment[]) {
  return (int)CALL(SYS_execve, path, arguments, environment, 0, 0, 0);
}

/* fork as glibc makes it (clone with SIGCHLD only); no atfork handlers or caches to mind. */
pid_t fork(void) { return (pid_t)CALL(SYS_clone, SIGCHLD, 0, 0, 0, 0, 0); }

pid_t waitpid(pid_t pid, int *status, int options) { return (pid_t)CALL(SYS_wait4, pid, status, options, 0, 0, 0); }
int kill(pid_t pid, int signal_number) { return (int)CALL(SYS_kill, pid, signal_number, 0, 0, 0, 0); }

int nanosleep(const struct timespec *duration, struct timespec *left) {
  return (int)CALL(SYS_nanosleep, duration, left, 0, 0, 0, 0);
}

/* ppoll, which both architectures have (aarch64 has no poll): the egress forwarder waits on
 * its listeners with no timeout or a whole number of milliseconds. */
int poll(struct pollfd *descriptors, nfds_t count, int timeout_ms) {
  struct timespec timeout = {timeout_ms / 1000, (long)(timeout_ms % 1000) * 1000000L};
  return (int)CALL(SYS_ppoll, descriptors, count, timeout_ms < 0 ? NULL : &timeout, NULL, 0, 0);
}

/* ---- files ---- */

int openat(int directory, const char *path, int flags, ...) {
  va_list list;
  va_start(list, flags);
  const mode_t mode = (flags & (O_CREAT | O_TMPFILE)) != 0 ? (mode_t)va_arg(list, int) : 0;
  va_end(list);
  return (int)CALL(SYS_openat, directory, path, flags, mode, 0, 0);
}
int mkdirat(int directory, const char *path, mode_t mode) { return (int)CALL(SYS_mkdirat, directory, path, mode, 0, 0, 0); }
int renameat(int from_directory, const char *from, int to_directory, const char *to) {
  return (int)CALL(SYS_renameat2, from_directory, from, to_directory, to, 0, 0);  /* aarch64 has no renameat */
}
int unlinkat(int directory, const char *path, int flags) { return (int)CALL(SYS_unlinkat, directory, path, flags, 0, 0, 0); }
/* glibc's struct stat is the kernel's on both architectures. */
int fstatat(int directory, const char *path, struct stat *status, int flags) {
  return (int)CALL(SYS_newfstatat, directory, path, status, flags, 0, 0);
}
ssize_t readlinkat(int directory, const char *path, char *buffer, size_t size) {
  return CALL(SYS_readlinkat, directory, path, buffer, size, 0, 0);
}

/* ---- sockets ---- */

int socket(int domain, int type, int protocol) { return (int)CALL(SYS_socket, domain, type, protocol, 0, 0, 0); }
int setsockopt(int fd, int level, int name, const void *value, socklen_t size) {
  return (int)CALL(SYS_setsockopt, fd, level, name, value, size, 0);
}
int bind(int fd, const struct sockaddr *address, socklen_t size) { return (int)CALL(SYS_bind, fd, address, size, 0, 0, 0); }
int listen(int fd, int backlog) { return (int)CALL(SYS_listen, fd, backlog, 0, 0, 0, 0); }
int accept4(int fd, struct sockaddr *address, socklen_t *size, int flags) {
  return (int)CALL(SYS_accept4, fd, address, size, flags, 0, 0);
}
ssize_t sendmsg(int fd, const struct msghdr *message, int flags) { return CALL(SYS_sendmsg, fd, message, flags, 0, 0, 0); }
ssize_t recvmsg(int fd, struct msghdr *message, int flags) { return CALL(SYS_recvmsg, fd, message, flags, 0, 0, 0); }

/* ---- signals ---- */

/* The kernel's struct sigaction (not glibc's, whose mask is 128 bytes and comes first). */
struct kernel_sigaction {
  void (*handler)(int);
  unsigned long flags;
  void (*restorer)(void);
  uint64_t mask;
};

#if defined(__x86_64__)
/* x86_64 signal frames return through a restorer the program supplies. */
void deskd_init_restore_rt(void);
__asm__(".text\n"
        ".type deskd_init_restore_rt,@function\n"
        "deskd_init_restore_rt:\n"
        "  mov $15, %rax\n" /* rt_sigreturn */
        "  syscall\n"
        "  hlt\n");
#define RESTORER_FLAG 0x04000000UL /* SA_RESTORER */
#endif

int sigaction(int signal_number, const struct sigaction *action, struct sigaction *old) {
  struct kernel_sigaction new_action, old_action;
  struct kernel_sigaction *given = NULL;
  if (action != NULL) {
    memset(&new_action, 0, sizeof new_action);
    new_action.handler = action->sa_handler;
    new_action.flags = (unsigned long)action->sa_flags;
    memcpy(&new_action.mask, &action->sa_mask, sizeof new_action.mask);
#if defined(__x86_64__)
    new_action.flags |= RESTORER_FLAG;
    new_action.restorer = deskd_init_restore_rt;
#endif
    given = &new_action;
  }
  const int result = (int)CALL(SYS_rt_sigaction, signal_number, given, old != NULL ? &old_action : NULL,
                               sizeof(uint64_t), 0, 0);
  if (result == 0 && old != NULL) {
    memset(old, 0, sizeof *old);
    old->sa_handler = old_action.handler;
    old->sa_flags = (int)old_action.flags;
    memcpy(&old->sa_mask, &old_action.mask, sizeof old_action.mask);
  }
  return result;
}

sighandler_t signal(int signal_number, sighandler_t handler) {
  struct sigaction action, old;
  memset(&action, 0, sizeof action);
  action.sa_handler = handler;
  action.sa_flags = SA_RESTART;
  return sigaction(signal_number, &action, &old) == 0 ? old.sa_handler : SIG_ERR;
}

int sigprocmask(int how, const sigset_t *set, sigset_t *old) {
  return (int)CALL(SYS_rt_sigprocmask, how, set, old, sizeof(uint64_t), 0, 0);
}
int sigemptyset(sigset_t *set) {
  memset(set, 0, sizeof *set);
  return 0;
}
int sigfillset(sigset_t *set) {
  memset(set, 0xff, sizeof *set);
  return 0;
}

/* ---- memory: each allocation its own mapping; the init allocates a handful, once ---- */

void *malloc(size_t size) {
  if (size == 0) size = 1;
  if (size > ((size_t)1 << 40)) {
    error_number = ENOMEM;
    return NULL;
  }
  const long mapped = CALL(SYS_mmap, 0, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  return mapped == -1 ? NULL : (void *)mapped;
}

void *calloc(size_t count, size_t size) {
  if (size != 0 && count > ((size_t)1 << 40) / size) {
    error_number = ENOMEM;
    return NULL;
  }
  return malloc(count * size); /* fresh anonymous pages are zero */
}

void free(void *pointer) { (void)pointer; /* never called: the init exits or execs */ }

/* ---- strings; the compiler may also call these for structure copies ---- */

void *memset(void *destination, int value, size_t size) {
  unsigned char *d = destination;
  while (size-- > 0) *d++ = (unsigned char)value;
  return destination;
}

void *memcpy(void *destination, const void *source, size_t size) {
  unsigned char *d = destination;
  const unsigned char *s = source;
  while (size-- > 0) *d++ = *s++;
  return destination;
}

void *memmove(void *destination, const void *source, size_t size) {
  unsigned char *d = destination;
  const unsigned char *s = source;
  if (d < s) {
    while (size-- > 0) *d++ = *s++;
  } else {
    while (size-- > 0) d[size] = s[size];
  }
  return destination;
}

int memcmp(const void *left, const void *right, size_t size) {
  const unsigned char *l = left, *r = right;
  for (; size > 0; --size, ++l, ++r) {
    if (*l != *r) return *l - *r;
  }
  return 0;
}

void *memchr(const void *bytes, int value, size_t size) {
  const unsigned char *b = bytes;
  for (; size > 0; --size, ++b) {
    if (*b == (unsigned char)value) return (void *)b;
  }
  return NULL;
}

/* ---- start ---- */

int main(int argc, char **argv);

__attribute__((used, noreturn)) static void deskd_init_start(long *stack) {
  const int argc = (int)stack[0];
  char **argv = (char **)(stack + 1);
  _exit(main(argc, argv));
}

#if defined(__x86_64__)
__asm__(".text\n"
        ".global _start\n"
        ".type _start,@function\n"
        "_start:\n"
        "  xor %ebp, %ebp\n"
        "  mov %rsp, %rdi\n"
        "  and $-16, %rsp\n"
        "  call deskd_init_start\n"
        "  hlt\n");
#else
__asm__(".text\n"
        ".global _start\n"
        ".type _start,%function\n"
        "_start:\n"
        "  mov x29, #0\n"
        "  mov x30, #0\n"
        "  mov x0, sp\n"
        "  and sp, x0, #-16\n"
        "  bl deskd_init_start\n"
        "  brk #0\n");
#endif
