// The host-support probes that need a throwaway child: user namespaces, and a mount
// namespace with pivot_root inside one. They try the real thing instead of guessing from
// sysctls, because a container's seccomp profile or a security module can refuse what the
// sysctls allow; the sysctls are then read only to explain a refusal.

#include <fcntl.h>
#include <sched.h>
#include <stdlib.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <filesystem>
#include <string>

#include "base/unique_fd.h"
#include "sandbox/host_support_internal.h"

namespace deskd::sandbox::host_support_internal {
namespace {

constexpr unsigned kUnprivilegedId = 65534;

// Where a probe stopped. Step kDone means every step succeeded.
enum Step : int {
  kDone = 0,
  kForkFailed,
  kChildDied,
  kDropPrivileges,
  kUnshare,
  kDenySetgroups,
  kWriteUidMap,
  kWriteGidMap,
  kMakeMountsPrivate,
  kMountTmpfs,
  kMakeOldRootFolder,
  kPivotRoot,
  kDetachOldRoot,
};

struct ProbeOutcome {
  int failed_step = kDone;
  int error_number = 0;
};

// Everything a probe child needs, formatted before the fork: after fork a multithreaded
// daemon may only make async-signal-safe calls, so the child only makes raw system calls.
struct ProbeInput {
  bool drop_to_unprivileged = false;
  int unshare_flags = CLONE_NEWUSER;
  char uid_map[48] = {};
  char gid_map[48] = {};
  std::size_t uid_map_length = 0;
  std::size_t gid_map_length = 0;
  const char* new_root = nullptr;  // only for the mount probe
  const char* old_root = nullptr;
};

ProbeInput make_input(bool drop_to_unprivileged, int unshare_flags) {
  ProbeInput input;
  input.drop_to_unprivileged = drop_to_unprivileged;
  input.unshare_flags = unshare_flags;
  const unsigned uid = drop_to_unprivileged ? kUnprivilegedId : geteuid();
  const unsigned gid = drop_to_unprivileged ? kUnprivilegedId : getegid();
  input.uid_map_length = static_cast<std::size_t>(
      std::snprintf(input.uid_map, sizeof input.uid_map, "0 %u 1\n", uid));
  input.gid_map_length = static_cast<std::size_t>(
      std::snprintf(input.gid_map, sizeof input.gid_map, "0 %u 1\n", gid));
  return input;
}

// Async-signal-safe: returns 0 or the errno of the failed open or write.
int write_whole(const char* path, const char* text, std::size_t length) {
  const int fd = open(path, O_WRONLY | O_CLOEXEC);
  if (fd < 0) return errno;
  const ssize_t written = write(fd, text, length);
  const int error_number = written < 0 ? errno : (static_cast<std::size_t>(written) == length ? 0 : EIO);
  close(fd);
  return error_number;
}

// Runs in the child: enters the namespaces and, for the mount probe, mounts a tmpfs and
// pivots into it. Only raw system calls.
ProbeOutcome probe_in_child(const ProbeInput& input) {
  if (input.drop_to_unprivileged) {
    // Raw syscalls: glibc's setuid signals every thread, which a forked child must not rely on.
    if (syscall(SYS_setgroups, 0, nullptr) != 0) return {kDropPrivileges, errno};
    if (syscall(SYS_setgid, kUnprivilegedId) != 0) return {kDropPrivileges, errno};
    if (syscall(SYS_setuid, kUnprivilegedId) != 0) return {kDropPrivileges, errno};
  }
  // A change of credentials makes a process non-dumpable, and /proc/self/uid_map of a
  // non-dumpable process belongs to root, so the maps below could not be written. A daemon
  // started as an ordinary user is dumpable; so is this child, now.
  prctl(PR_SET_DUMPABLE, 1, 0, 0, 0);
  if (unshare(input.unshare_flags) != 0) return {kUnshare, errno};
  // Since Linux 3.19 an unprivileged process must deny setgroups before it may write gid_map.
  if (int error_number = write_whole("/proc/self/setgroups", "deny", 4)) return {kDenySetgroups, error_number};
  if (int error_number = write_whole("/proc/self/uid_map", input.uid_map, input.uid_map_length)) {
    return {kWriteUidMap, error_number};
  }
  if (int error_number = write_whole("/proc/self/gid_map", input.gid_map, input.gid_map_length)) {
    return {kWriteGidMap, error_number};
  }
  if (input.new_root == nullptr) return {};

  // Without this, mounts below would propagate back to the host's shared mounts, and
  // pivot_root refuses a shared new root or parent.
  if (mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) return {kMakeMountsPrivate, errno};
  if (mount("tmpfs", input.new_root, "tmpfs", MS_NOSUID | MS_NODEV, "size=64k,mode=0755") != 0) {
    return {kMountTmpfs, errno};
  }
  if (mkdir(input.old_root, 0700) != 0) return {kMakeOldRootFolder, errno};
  // pivot_root fails with EINVAL when the current root is not a mount point (a chroot) or
  // is the initramfs; the launcher would fail the same way, so the probe says so now.
  if (syscall(SYS_pivot_root, input.new_root, input.old_root) != 0) return {kPivotRoot, errno};
  if (chdir("/") != 0) return {kPivotRoot, errno};
  if (umount2("/old-root", MNT_DETACH) != 0) return {kDetachOldRoot, errno};
  return {};
}

// Forks, runs the probe in the child, and returns what the child reported through a pipe.
ProbeOutcome run_probe(const ProbeInput& input) {
  int pipe_fds[2];
  if (pipe2(pipe_fds, O_CLOEXEC) != 0) return {kForkFailed, errno};
  UniqueFd read_end(pipe_fds[0]);
  UniqueFd write_end(pipe_fds[1]);
  const pid_t child = fork();
  if (child < 0) return {kForkFailed, errno};
  if (child == 0) {
    const ProbeOutcome outcome = probe_in_child(input);
    (void)!write(write_end.get(), &outcome, sizeof outcome);
    _exit(0);
  }
  write_end.reset();
  ProbeOutcome outcome;
  const ssize_t received =
      retry_on_eintr([&] { return read(read_end.get(), &outcome, sizeof outcome); });
  int status = 0;
  retry_on_eintr([&] { return waitpid(child, &status, 0); });
  if (received != static_cast<ssize_t>(sizeof outcome)) {
    return {kChildDied, WIFSIGNALED(status) ? WTERMSIG(status) : 0};
  }
  return outcome;
}

std::string step_description(int step, int unshare_flags) {
  switch (step) {
    case kForkFailed: return "fork for the probe";
    case kDropPrivileges: return "dropping to uid 65534";
    case kUnshare:
      return unshare_flags & CLONE_NEWNS ? "unshare(CLONE_NEWUSER|CLONE_NEWNS)" : "unshare(CLONE_NEWUSER)";
    case kDenySetgroups: return "writing deny to /proc/self/setgroups";
    case kWriteUidMap: return "writing /proc/self/uid_map";
    case kWriteGidMap: return "writing /proc/self/gid_map";
    case kMakeMountsPrivate: return "making mounts private (MS_REC|MS_PRIVATE on /)";
    case kMountTmpfs: return "mounting a tmpfs";
    case kMakeOldRootFolder: return "creating the old-root folder in the tmpfs";
    case kPivotRoot: return "pivot_root into the tmpfs";
    case kDetachOldRoot: return "detaching the old root";
    default: return "an unknown step";
  }
}

std::string failure_sentence(const ProbeOutcome& outcome, int unshare_flags) {
  if (outcome.failed_step == kChildDied) {
    return "the probe child died" +
           (outcome.error_number != 0 ? " by signal " + std::to_string(outcome.error_number) : std::string());
  }
  return step_description(outcome.failed_step, unshare_flags) + " failed with " + describe_errno(outcome.error_number);
}

bool inside_container() {
  std::error_code error;
  if (std::filesystem::exists("/.dockerenv", error) || std::filesystem::exists("/run/.containerenv", error)) {
    return true;
  }
  const auto cgroup = read_first_line("/proc/1/cgroup").value_or("");
  for (const char* word : {"docker", "kubepods", "containerd", "libpod", "lxc"}) {
    if (cgroup.find(word) != std::string::npos) return true;
  }
  return false;
}

struct Diagnosis {
  std::string reason;
  std::string fix;
};

// Why creating or using a user namespace was refused, from the errno and the knobs that
// can refuse it. `unprivileged`: the probe ran without CAP_SYS_ADMIN in the host namespace.
Diagnosis diagnose_refusal(const ProbeOutcome& outcome, bool unprivileged) {
  if (outcome.failed_step == kForkFailed || outcome.failed_step == kChildDied) {
    return {"the probe could not run", "run deskd doctor again when the host has processes and memory to spare"};
  }
  const int error_number = outcome.error_number;
  const auto maximum = read_number("/proc/sys/user/max_user_namespaces");
  const auto debian_knob = read_number("/proc/sys/kernel/unprivileged_userns_clone");
  const auto apparmor_knob = read_number("/proc/sys/kernel/apparmor_restrict_unprivileged_userns");
  const auto seccomp_mode = seccomp_mode_of_this_process();
  const std::string persist = " (and persist it in /etc/sysctl.d/)";
  if (maximum && *maximum == 0) {
    return {"user.max_user_namespaces is 0", "sysctl -w user.max_user_namespaces=15000" + persist};
  }
  if (error_number == ENOSPC) {
    return {"the limit of user namespaces is reached (user.max_user_namespaces is " +
                (maximum ? std::to_string(*maximum) : std::string("unknown")) + ")",
            "sysctl -w user.max_user_namespaces=15000" + persist};
  }
  if (error_number == ENOSYS || error_number == EINVAL) {
    return {"the kernel has no user namespaces", "use a kernel built with CONFIG_USER_NS=y"};
  }
  if (error_number == EUSERS) {
    return {"user namespaces are nested 32 deep already",
            "run deskd in a less deeply nested user namespace"};
  }
  if (unprivileged && debian_knob && *debian_knob == 0) {
    return {"kernel.unprivileged_userns_clone is 0",
            "sysctl -w kernel.unprivileged_userns_clone=1" + persist};
  }
  if (unprivileged && apparmor_knob && *apparmor_knob != 0) {
    return {"AppArmor restricts unprivileged user namespaces "
            "(kernel.apparmor_restrict_unprivileged_userns is " + std::to_string(*apparmor_knob) + ")",
            "install deskd's AppArmor profile from packaging/ (it allows userns for deskd) and "
            "load it with apparmor_parser -r, or sysctl -w "
            "kernel.apparmor_restrict_unprivileged_userns=0" + persist};
  }
  if (seccomp_mode && *seccomp_mode == 2) {
    return {std::string("the sysctls allow it, so a seccomp filter on this process refuses it (Seccomp: 2") +
                (inside_container() ? ", inside a container)" : ")"),
            "run the container with a seccomp profile that allows unshare and clone with namespace "
            "flags (podman/docker run --security-opt seccomp=<deskd's profile from images/>)"};
  }
  return {"the sysctls allow it and no seccomp filter is set, so a chroot, a security module "
          "(SELinux, AppArmor) or the container runtime refuses it",
          "run deskd outside any chroot, and look for the denial in the kernel or audit log "
          "(journalctl -k, /var/log/audit/audit.log)"};
}

// The user-namespace sysctls this kernel has, "name=value, ...", leaving out those that
// `already_said` names.
std::string knob_summary(const std::string& already_said = "") {
  std::string summary;
  const auto append = [&](const char* name, const std::string& path) {
    if (already_said.find(name) != std::string::npos) return;
    if (const auto value = read_number(path)) {
      summary += (summary.empty() ? "" : ", ") + std::string(name) + "=" + std::to_string(*value);
    }
  };
  append("user.max_user_namespaces", "/proc/sys/user/max_user_namespaces");
  append("kernel.unprivileged_userns_clone", "/proc/sys/kernel/unprivileged_userns_clone");
  append("kernel.apparmor_restrict_unprivileged_userns",
         "/proc/sys/kernel/apparmor_restrict_unprivileged_userns");
  return summary;
}

SupportCheck missing(std::string name, std::string detail, std::string fix) {
  return SupportCheck{std::move(name), false, true, std::move(detail), std::move(fix)};
}

}  // namespace

SupportCheck check_user_namespaces() {
  const std::string name = "user namespaces";
  const bool root = geteuid() == 0;
  const ProbeOutcome own = run_probe(make_input(false, CLONE_NEWUSER));
  const auto knobs_note = [](const std::string& already_said) {
    const std::string knobs = knob_summary(already_said);
    return knobs.empty() ? std::string() : " (" + knobs + ")";
  };
  if (own.failed_step != kDone) {
    const Diagnosis diagnosis = diagnose_refusal(own, !root);
    return missing(name, failure_sentence(own, CLONE_NEWUSER) + ": " + diagnosis.reason + knobs_note(diagnosis.reason),
                   diagnosis.fix);
  }
  std::string detail = std::string(root ? "a root" : "this unprivileged") +
                       " process can create one and map its ids";
  if (root) {
    // Root may create user namespaces where ordinary users may not; say whether a deskd
    // running as an ordinary user would work too.
    const ProbeOutcome dropped = run_probe(make_input(true, CLONE_NEWUSER));
    if (dropped.failed_step == kDone) {
      detail += "; so can uid 65534";
    } else {
      detail += "; an unprivileged deskd could not: " + failure_sentence(dropped, CLONE_NEWUSER) + ", " +
                diagnose_refusal(dropped, true).reason;
    }
  }
  return SupportCheck{name, true, true, detail + knobs_note(detail), ""};
}

SupportCheck check_mount_namespace(bool user_namespaces_available) {
  const std::string name = "mount namespace";
  if (!user_namespaces_available) {
    return missing(name, "not tried: user namespaces are unavailable", "fix user namespaces first (above)");
  }
  // The tmpfs goes on a fresh folder, in the probe's private mount namespace only; it
  // disappears with the child. If no folder can be made, /tmp itself serves: mounting over
  // it is just as invisible outside the probe.
  std::error_code error;
  std::filesystem::path temporary = std::filesystem::temp_directory_path(error);
  if (error) temporary = "/tmp";
  std::string template_path = (temporary / "deskd-doctor-XXXXXX").native();
  const bool made_folder = mkdtemp(template_path.data()) != nullptr;
  const std::string new_root = made_folder ? template_path : std::string("/tmp");
  const std::string old_root = new_root + "/old-root";

  const int flags = CLONE_NEWUSER | CLONE_NEWNS;
  ProbeInput input = make_input(false, flags);
  input.new_root = new_root.c_str();
  input.old_root = old_root.c_str();
  const ProbeOutcome outcome = run_probe(input);
  if (made_folder) rmdir(new_root.c_str());

  if (outcome.failed_step == kDone) {
    return SupportCheck{name, true, true,
                        "a tmpfs mounted and pivot_root into it in a new user+mount namespace", ""};
  }
  const std::string failure = failure_sentence(outcome, flags);
  if (outcome.failed_step == kPivotRoot && outcome.error_number == EINVAL) {
    return missing(name, failure + ": this process's root is not a mount point (a chroot or the initramfs)",
                   "run deskd from a real root filesystem, not inside a chroot or from the initramfs");
  }
  if (outcome.failed_step <= kWriteGidMap || outcome.error_number == EPERM || outcome.error_number == EACCES) {
    const Diagnosis diagnosis = diagnose_refusal(outcome, geteuid() != 0);
    return missing(name, failure + ": " + diagnosis.reason, diagnosis.fix);
  }
  return missing(name, failure, "look for the denial in the kernel log (journalctl -k)");
}

}  // namespace deskd::sandbox::host_support_internal
