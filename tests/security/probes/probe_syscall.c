// probe_syscall NAME [PATH] — makes one syscall that the sandbox should refuse (or, for the
// controls, allow) and prints "ok" or "errno <NAME>". A syscall killed by seccomp prints
// nothing: the probe dies with SIGSYS and the tests read the exit status.
//
// Arguments are harmless, and where possible chosen so that a call which got past seccomp
// fails with a different errno than seccomp's EPERM (setns(-1) → EBADF, TIOCSTI on
// /dev/null → ENOTTY, ...) or succeeds: a kernel refusing for lack of a capability must not
// pass for the filter. PATH is the mount point for mount/umount2 (default /tmp).
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/io_uring.h>
#include <linux/perf_event.h>
#include <linux/filter.h>
#include <linux/sched.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/acct.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/personality.h>
#include <sys/ptrace.h>
#include <sys/quota.h>
#include <sys/socket.h>
#include <sys/swap.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

static const char* mount_point = "/tmp";

// A clone that succeeded made a child; it leaves at once and the parent reaps it.
static long finish_clone(long result) {
  if (result == 0) _exit(0);
  if (result > 0) waitpid((pid_t)result, NULL, __WALL);
  return result;
}

static long raw_clone(unsigned long flags) {
  return finish_clone(syscall(SYS_clone, flags | SIGCHLD, 0, NULL, NULL, 0));
}

static long do_getpid(void) { return syscall(SYS_getpid); }
static long do_mount(void) { return mount("none", mount_point, "tmpfs", 0, NULL); }
static long do_umount2(void) { return umount2(mount_point, MNT_DETACH); }
static long do_unshare_user(void) { return unshare(CLONE_NEWUSER); }
static long do_unshare_mount(void) { return unshare(CLONE_NEWNS); }
static long do_setns(void) { return setns(-1, 0); }
static long do_ptrace(void) { return ptrace(PTRACE_TRACEME, 0, NULL, NULL); }
static long do_bpf(void) { return syscall(SYS_bpf, 0 /* BPF_MAP_CREATE */, NULL, 0); }

static long do_perf_event_open(void) {
  // Counting its own user-mode CPU clock is allowed by perf_event_paranoid=2: only the
  // filter can refuse it.
  struct perf_event_attr attr;
  memset(&attr, 0, sizeof attr);
  attr.type = PERF_TYPE_SOFTWARE;
  attr.size = sizeof attr;
  attr.config = PERF_COUNT_SW_CPU_CLOCK;
  attr.disabled = 1;
  attr.exclude_kernel = 1;
  attr.exclude_hv = 1;
  return syscall(SYS_perf_event_open, &attr, 0, -1, -1, 0);
}

// UFFD_USER_MODE_ONLY (1) needs no privilege even with vm.unprivileged_userfaultfd=0.
static long do_userfaultfd(void) { return syscall(SYS_userfaultfd, O_CLOEXEC | 1); }

static long do_io_uring_setup(void) {
  struct io_uring_params params;
  memset(&params, 0, sizeof params);
  return syscall(SYS_io_uring_setup, 1, &params);
}

static long do_keyctl(void) { return syscall(SYS_keyctl, 0 /* GET_KEYRING_ID */, -3, 0); }
static long do_add_key(void) {
  return syscall(SYS_add_key, "user", "deskd-probe", "x", 1, -2 /* process keyring */);
}
static long do_request_key(void) {
  return syscall(SYS_request_key, "user", "deskd-probe-missing", NULL, 0);
}
static long do_kexec_load(void) { return syscall(SYS_kexec_load, 0, 0, NULL, 0); }
static long do_init_module(void) { return syscall(SYS_init_module, NULL, 0, ""); }
static long do_finit_module(void) { return syscall(SYS_finit_module, -1, "", 0); }
static long do_delete_module(void) {
  return syscall(SYS_delete_module, "deskd_probe_missing", O_NONBLOCK);
}
static long do_open_by_handle_at(void) {
  return syscall(SYS_open_by_handle_at, AT_FDCWD, NULL, O_RDONLY);
}

static long do_name_to_handle_at(void) {
  struct {
    struct file_handle handle;
    unsigned char bytes[128];
  } buffer;
  buffer.handle.handle_bytes = sizeof buffer.bytes;
  int mount_id;
  return name_to_handle_at(AT_FDCWD, "/", &buffer.handle, &mount_id, 0);
}

static long do_acct(void) { return acct(NULL); }
static long do_swapon(void) { return swapon("/deskd-probe-missing", 0); }
static long do_swapoff(void) { return swapoff("/deskd-probe-missing"); }
static long do_reboot(void) { return syscall(SYS_reboot, 0, 0, 0, NULL); /* bad magic */ }
static long do_quotactl(void) { return syscall(SYS_quotactl, QCMD(Q_SYNC, USRQUOTA), NULL, 0, NULL); }
static long do_iopl(void) { return syscall(SYS_iopl, 3); }
static long do_ioperm(void) { return syscall(SYS_ioperm, 0x80, 1, 1); }
static long do_syslog(void) { return syscall(SYS_syslog, 10 /* SIZE_BUFFER */, NULL, 0); }
static long do_personality(void) { return syscall(SYS_personality, ADDR_NO_RANDOMIZE); }
static long do_personality_query(void) { return syscall(SYS_personality, 0xffffffffUL); }

static volatile char own_memory[16] = "deskd";
static long do_process_vm_readv(void) {
  char copy[16];
  struct iovec local = {copy, sizeof copy};
  struct iovec remote = {(void*)own_memory, sizeof own_memory};
  return process_vm_readv(getpid(), &local, 1, &remote, 1, 0);
}
static long do_process_vm_writev(void) {
  char copy[16] = "probe";
  struct iovec local = {copy, sizeof copy};
  struct iovec remote = {(void*)own_memory, sizeof own_memory};
  return process_vm_writev(getpid(), &local, 1, &remote, 1, 0);
}

static long do_pivot_root(void) { return syscall(SYS_pivot_root, ".", "."); }
static long do_fsopen(void) { return syscall(SYS_fsopen, "tmpfs", 0); }
static long do_fsconfig(void) { return syscall(SYS_fsconfig, -1, 0, NULL, NULL, 0); }
static long do_fsmount(void) { return syscall(SYS_fsmount, -1, 0, 0); }
static long do_fspick(void) { return syscall(SYS_fspick, AT_FDCWD, "/", 0); }
static long do_mount_setattr(void) { return syscall(SYS_mount_setattr, -1, "", 0, NULL, 0); }
// Without OPEN_TREE_CLONE this only opens an O_PATH fd: no privilege needed.
static long do_open_tree(void) { return syscall(SYS_open_tree, AT_FDCWD, "/", O_CLOEXEC); }
static long do_move_mount(void) { return syscall(SYS_move_mount, -1, "", -1, "", 0); }
static long do_clone_plain(void) { return raw_clone(0); }
static long do_clone_newns(void) { return raw_clone(CLONE_NEWNS); }
static long do_clone_newuser(void) { return raw_clone(CLONE_NEWUSER); }

// An allow-everything filter: installing it changes nothing, so the controls can succeed.
static long install_allow_all(unsigned flags) {
  struct sock_filter allow = BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
  struct sock_fprog program = {1, &allow};
  long result = syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, flags, &program);
  if (result > 0) close((int)result);  // a listener descriptor, had it been allowed
  return result > 0 ? 0 : result;
}
static long do_seccomp_filter(void) { return install_allow_all(0); }
static long do_seccomp_new_listener(void) { return install_allow_all(SECCOMP_FILTER_FLAG_NEW_LISTENER); }

static long close_result(long fd) {
  if (fd >= 0) close((int)fd);
  return fd >= 0 ? 0 : fd;
}
static long do_socket_unix(void) { return close_result(socket(AF_UNIX, SOCK_STREAM, 0)); }
static long socketpair_of(int type) {
  int pair[2];
  long result = socketpair(AF_UNIX, type, 0, pair);
  if (result == 0) {
    close(pair[0]);
    close(pair[1]);
  }
  return result;
}
static long do_socketpair_unix(void) { return socketpair_of(SOCK_STREAM); }
static long do_socketpair_unix_seqpacket(void) { return socketpair_of(SOCK_SEQPACKET | SOCK_CLOEXEC); }
static long do_socketpair_unix_dgram(void) { return socketpair_of(SOCK_DGRAM); }
static long do_socketpair_unix_dgram_flags(void) {
  return socketpair_of(SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK);
}

static long do_clone3(void) {
  struct clone_args args;
  memset(&args, 0, sizeof args);
  args.exit_signal = SIGCHLD;
  return finish_clone(syscall(SYS_clone3, &args, sizeof args));
}

// x32 getpid: the x32 bit on the x86-64 number. Without x32 in the kernel it would fail
// with ENOSYS; the filter must kill before that.
static long do_x32_getpid(void) { return syscall(0x40000000L | SYS_getpid); }

// i386 getpid (20) through the 32-bit entry point.
static long do_int80_getpid(void) {
  long result;
  __asm__ volatile("int $0x80" : "=a"(result) : "a"(20L) : "memory", "r8", "r9", "r10", "r11");
  if (result < 0 && result > -4096) {
    errno = (int)-result;
    return -1;
  }
  return result;
}

// On /dev/null an ioctl that got past the filter fails with ENOTTY, not EPERM.
static long tty_ioctl(unsigned long request, void* argument) {
  int fd = open("/dev/null", O_RDWR | O_CLOEXEC);
  if (fd < 0) return -1;
  return syscall(SYS_ioctl, fd, request, argument);
}
static long do_tiocsti(void) {
  char c = '#';
  return tty_ioctl(TIOCSTI, &c);
}
// The kernel truncates the request to 32 bits; a filter that compares all 64 would let it by.
static long do_tiocsti_high_bits(void) {
  char c = '#';
  return tty_ioctl((1UL << 32) | TIOCSTI, &c);
}
static long do_tioclinux(void) {
  char subcode = 3; /* TIOCL_GETSHIFTSTATE... any subcode */
  return tty_ioctl(TIOCLINUX, &subcode);
}
static long do_unknown_1000(void) { return syscall(1000); }

struct probe {
  const char* name;
  long (*run)(void);
};

static const struct probe kProbes[] = {
    {"getpid", do_getpid},
    {"mount", do_mount},
    {"umount2", do_umount2},
    {"unshare-user", do_unshare_user},
    {"unshare-mount", do_unshare_mount},
    {"setns", do_setns},
    {"ptrace", do_ptrace},
    {"bpf", do_bpf},
    {"perf_event_open", do_perf_event_open},
    {"userfaultfd", do_userfaultfd},
    {"io_uring_setup", do_io_uring_setup},
    {"keyctl", do_keyctl},
    {"add_key", do_add_key},
    {"request_key", do_request_key},
    {"kexec_load", do_kexec_load},
    {"init_module", do_init_module},
    {"finit_module", do_finit_module},
    {"delete_module", do_delete_module},
    {"open_by_handle_at", do_open_by_handle_at},
    {"name_to_handle_at", do_name_to_handle_at},
    {"acct", do_acct},
    {"swapon", do_swapon},
    {"swapoff", do_swapoff},
    {"reboot", do_reboot},
    {"quotactl", do_quotactl},
    {"iopl", do_iopl},
    {"ioperm", do_ioperm},
    {"syslog", do_syslog},
    {"personality", do_personality},
    {"personality-query", do_personality_query},
    {"process_vm_readv", do_process_vm_readv},
    {"process_vm_writev", do_process_vm_writev},
    {"pivot_root", do_pivot_root},
    {"fsopen", do_fsopen},
    {"fsconfig", do_fsconfig},
    {"fsmount", do_fsmount},
    {"fspick", do_fspick},
    {"mount_setattr", do_mount_setattr},
    {"open_tree", do_open_tree},
    {"move_mount", do_move_mount},
    {"clone-plain", do_clone_plain},
    {"clone-newns", do_clone_newns},
    {"clone-newuser", do_clone_newuser},
    {"clone3", do_clone3},
    {"seccomp-filter", do_seccomp_filter},
    {"seccomp-new-listener", do_seccomp_new_listener},
    {"socket-unix", do_socket_unix},
    {"socketpair-unix", do_socketpair_unix},
    {"socketpair-unix-seqpacket", do_socketpair_unix_seqpacket},
    {"socketpair-unix-dgram", do_socketpair_unix_dgram},
    {"socketpair-unix-dgram-flags", do_socketpair_unix_dgram_flags},
    {"x32-getpid", do_x32_getpid},
    {"int80-getpid", do_int80_getpid},
    {"tiocsti", do_tiocsti},
    {"tiocsti-high-bits", do_tiocsti_high_bits},
    {"tioclinux", do_tioclinux},
    {"unknown-1000", do_unknown_1000},
};

int main(int argc, char** argv) {
  if (argc != 2 && argc != 3) {
    fprintf(stderr, "usage: probe_syscall NAME [PATH]\n");
    return 2;
  }
  if (argc == 3) mount_point = argv[2];
  for (size_t i = 0; i < sizeof kProbes / sizeof kProbes[0]; ++i) {
    if (strcmp(kProbes[i].name, argv[1]) != 0) continue;
    // Flushed first: a kill by SIGSYS must not be mistaken for a probe that never ran.
    fprintf(stderr, "probe_syscall: calling %s\n", argv[1]);
    errno = 0;
    long result = kProbes[i].run();
    if (result < 0)
      printf("errno %s\n", strerrorname_np(errno));
    else
      printf("ok\n");
    return 0;
  }
  fprintf(stderr, "probe_syscall: unknown probe %s\n", argv[1]);
  return 2;
}
