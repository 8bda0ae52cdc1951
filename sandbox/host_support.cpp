#include "sandbox/host_support.h"

#include <fcntl.h>
#include <linux/openat2.h>
#include <linux/seccomp.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>

#include "base/unique_fd.h"
#include "sandbox/host_support_internal.h"
#include "sandbox/landlock_audit.h"
#include "sandbox/landlock_rules.h"
#include "sandbox/seccomp_notification.h"

namespace deskd::sandbox {

namespace host_support_internal {

std::string describe_errno(int error_number) {
  const char* name = strerrorname_np(error_number);
  const char* description = strerrordesc_np(error_number);
  return std::string(name != nullptr ? name : "errno " + std::to_string(error_number)) + " (" +
         (description != nullptr ? description : "unknown error") + ")";
}

std::optional<std::string> read_first_line(const std::string& path) {
  std::ifstream file(path);
  std::string line;
  if (!file || !std::getline(file, line)) return std::nullopt;
  return line;
}

std::optional<long> read_number(const std::string& path) {
  const auto line = read_first_line(path);
  if (!line || line->empty()) return std::nullopt;
  char* end = nullptr;
  errno = 0;
  const long value = std::strtol(line->c_str(), &end, 10);
  if (errno != 0 || end == line->c_str()) return std::nullopt;
  return value;
}

namespace {

// Reads "<field>:\t<number>" from /proc/self/status.
std::optional<int> status_field(const std::string& field) {
  std::ifstream status("/proc/self/status");
  std::string line;
  const std::string prefix = field + ":";
  while (std::getline(status, line)) {
    if (line.rfind(prefix, 0) == 0) return std::atoi(line.c_str() + prefix.size());
  }
  return std::nullopt;
}

}  // namespace

std::optional<int> seccomp_mode_of_this_process() { return status_field("Seccomp"); }

}  // namespace host_support_internal

namespace {

using host_support_internal::describe_errno;
using host_support_internal::seccomp_mode_of_this_process;

SupportCheck available(std::string name, bool required, std::string detail) {
  return SupportCheck{std::move(name), true, required, std::move(detail), ""};
}

SupportCheck missing(std::string name, bool required, std::string detail, std::string fix) {
  return SupportCheck{std::move(name), false, required, std::move(detail), std::move(fix)};
}

struct Diagnosis {
  std::string detail;
  std::string fix;
};

struct KernelRelease {
  std::string text;  // e.g. "6.18.44"
  int version = 0;   // major * 100 + minor, e.g. 618
};

KernelRelease running_kernel() {
  utsname names{};
  if (uname(&names) != 0) return {};
  int major = 0;
  int minor = 0;
  std::sscanf(names.release, "%d.%d", &major, &minor);
  return {names.release, major * 100 + minor};
}

// Why a system call failed, and the fix. A container's seccomp profile answers ENOSYS (or
// EPERM) for calls newer than the profile, which looks exactly like an old kernel; the
// running kernel's version tells the two apart. `since`: the first Linux that has the call,
// as major * 100 + minor; `built_without_fix`: the fix for a new kernel built without it.
Diagnosis diagnose_system_call(const std::string& system_call, int error_number, int since,
                               const std::string& built_without_fix) {
  const KernelRelease kernel = running_kernel();
  const auto mode = seccomp_mode_of_this_process();
  const std::string since_text = "Linux " + std::to_string(since / 100) + "." + std::to_string(since % 100);
  const std::string failure = system_call + " failed with " + describe_errno(error_number);
  if (kernel.version < since) {
    return {failure + ": the kernel (" + kernel.text + ") is older than " + since_text,
            "use " + since_text + " or newer"};
  }
  if (mode && *mode == 2) {
    return {failure + ": this process's seccomp filter (Seccomp: 2, e.g. a container's profile) refuses it",
            "let " + system_call + " through the seccomp filter (for a container: run it with a seccomp "
            "profile that allows it, e.g. podman/docker run --security-opt seccomp=<profile>)"};
  }
  if (error_number == ENOSYS) return {failure + ": the kernel was built without it", built_without_fix};
  return {failure + ": a security module refuses it",
          "look for the denial in the kernel or audit log (journalctl -k, /var/log/audit/audit.log)"};
}

SupportCheck missing(std::string name, bool required, Diagnosis diagnosis, const std::string& consequence = "") {
  return missing(std::move(name), required, diagnosis.detail + consequence, std::move(diagnosis.fix));
}

SupportCheck check_seccomp() {
  const std::string name = "seccomp";
  const auto mode = seccomp_mode_of_this_process();
  const std::string kernel_fix = "use a kernel built with CONFIG_SECCOMP=y and CONFIG_SECCOMP_FILTER=y";
  if (!mode || prctl(PR_GET_SECCOMP, 0, 0, 0, 0) < 0) {
    return missing(name, true, "the kernel has no seccomp (no Seccomp line in /proc/self/status)", kernel_fix);
  }
  // deskd's profile uses the errno and kill-process actions; asking for both proves that
  // filter mode works and that a filter already on this process lets seccomp() through.
  for (std::uint32_t action : {SECCOMP_RET_ERRNO, SECCOMP_RET_KILL_PROCESS}) {
    if (syscall(SYS_seccomp, SECCOMP_GET_ACTION_AVAIL, 0, &action) != 0) {
      return missing(name, true, diagnose_system_call("seccomp(SECCOMP_GET_ACTION_AVAIL)", errno, 414, kernel_fix));
    }
  }
  std::string detail = "filter mode with errno and kill-process actions; this process: Seccomp " +
                       std::to_string(*mode);
  if (*mode == 2) {
    const auto filters = host_support_internal::status_field("Seccomp_filters");
    const std::string count =
        filters ? std::to_string(*filters) + (*filters == 1 ? " filter" : " filters") : std::string("filtered");
    detail += " (" + count + " already, e.g. a container's; deskd's filter stacks on top and the stricter answer wins)";
  } else {
    detail += " (no filter)";
  }
  return available(name, true, detail);
}

SupportCheck check_landlock() {
  const std::string name = "landlock";
  const LandlockSupport probe = probe_landlock();
  if (probe.abi > 0) return available(name, false, "ABI " + std::to_string(probe.abi));
  // The running list of security modules, so that the fix can name the whole lsm= value.
  const std::string modules = host_support_internal::read_first_line("/sys/kernel/security/lsm").value_or("");
  const std::string lsm = "lsm=landlock," + (modules.empty() ? std::string("lockdown,yama,integrity,apparmor,bpf") : modules);
  const std::string boot_fix = "boot with " + lsm + " (add it to GRUB_CMDLINE_LINUX in /etc/default/grub, then update-grub)";
  const std::string consequence = "; writes are held by the read-only mounts alone";
  if (probe.error_number == EOPNOTSUPP) {
    return missing(name, false,
                   "landlock_create_ruleset failed with " + describe_errno(probe.error_number) +
                       ": landlock is built in but not enabled at boot" + consequence,
                   boot_fix);
  }
  return missing(name, false,
                 diagnose_system_call("landlock_create_ruleset", probe.error_number, 513,
                                      "use a kernel built with CONFIG_SECURITY_LANDLOCK=y, and " + boot_fix),
                 consequence);
}

SupportCheck check_openat2() {
  const std::string name = "openat2";
  open_how how{};
  how.flags = O_PATH | O_DIRECTORY | O_CLOEXEC;
  how.resolve = RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;
  const UniqueFd fd(static_cast<int>(syscall(SYS_openat2, AT_FDCWD, "/", &how, sizeof how)));
  if (fd.valid()) return available(name, false, "available");
  return missing(name, false, diagnose_system_call("openat2", errno, 506, "use Linux 5.6 or newer"),
                 "; file tools use the component-by-component O_NOFOLLOW walk instead");
}

SupportCheck check_pidfd() {
  const std::string name = "pidfd";
  const UniqueFd fd(static_cast<int>(syscall(SYS_pidfd_open, getpid(), 0)));
  if (fd.valid()) return available(name, false, "available");
  return missing(name, false, diagnose_system_call("pidfd_open", errno, 503, "use Linux 5.3 or newer"),
                 "; sandboxed processes are followed by pid instead");
}

SupportCheck check_mount_setattr() {
  const std::string name = "mount_setattr";
  // A deliberately invalid call: a kernel that has mount_setattr refuses the arguments
  // (EINVAL for the empty attribute size, or EBADF), one that lacks it answers ENOSYS.
  const long result = syscall(SYS_mount_setattr, -1, "", AT_EMPTY_PATH, nullptr, 0);
  const int error_number = result == 0 ? 0 : errno;
  if (error_number == EINVAL || error_number == EBADF) {
    return available(name, true, "available (the host view is made read-only recursively with it)");
  }
  return missing(name, true, diagnose_system_call("mount_setattr", error_number, 512, "use Linux 5.12 or newer"));
}

// Whether deskd can tell refused system calls (seccomp_notification.h): without user
// notification the filter answers as it always did, and nobody hears of the refusal.
SupportCheck check_syscall_refusal_reports() {
  const std::string name = "syscall refusal reports";
  if (seccomp_user_notification_available() && deskd_under_seccomp_filter()) {
    return missing(name, false,
                   "refusals of system calls are not reported: deskd runs under a seccomp filter of its own (its "
                   "container's), which would answer them first with its own errno",
                   "nothing to change: the desk's calls are refused as before, only not reported");
  }
  if (seccomp_user_notification_available()) {
    return available(name, false, "refused system calls are reported (seccomp user notification)");
  }
  return missing(name, false, "refusals of system calls are not reported: the kernel has no seccomp user notification",
                 "use Linux 5.0 or newer");
}

// Landlock's audit records (ABI 7, Linux 6.15) are the only way deskd can hear of a Landlock
// refusal (landlock_audit.h): read by a root deskd, and made only while the audit is on.
SupportCheck check_landlock_refusal_reports() {
  const std::string name = "landlock refusal reports";
  const LandlockSupport probe = probe_landlock();
  if (probe.abi < 7) {
    return missing(name, false,
                   "Landlock refusals are not reported on this kernel (Landlock ABI " + std::to_string(probe.abi) +
                       "; audit records need ABI 7, Linux 6.15)",
                   "use Linux 6.15 or newer");
  }
  if (auto socket = open_audit_log_socket(); !socket.ok()) {
    return missing(name, false, "Landlock refusals are not reported: " + socket.error().what,
                   "run deskd as root (with CAP_AUDIT_READ) to have them reported");
  }
  const auto enabled = kernel_audit_enabled();
  if (!enabled.ok()) return missing(name, false, "Landlock refusals may not be reported: " + enabled.error().what,
                                          "run `deskd doctor` as root to tell");
  if (!*enabled) {
    return missing(name, false, "Landlock refusals are not reported while the kernel's audit is off",
                   "turn it on with `auditctl -e 1`, or boot with audit=1");
  }
  return available(name, false, "Landlock refusals are reported (the kernel's audit records)");
}

}  // namespace

std::vector<SupportCheck> check_host_support() {
  std::vector<SupportCheck> checks;
  checks.push_back(host_support_internal::check_user_namespaces());
  checks.push_back(host_support_internal::check_mount_namespace(checks.back().available));
  checks.push_back(check_seccomp());
  checks.push_back(check_landlock());
  checks.push_back(host_support_internal::check_cgroup_delegation());
  checks.push_back(check_openat2());
  checks.push_back(check_pidfd());
  checks.push_back(check_mount_setattr());
  checks.push_back(check_syscall_refusal_reports());
  checks.push_back(check_landlock_refusal_reports());
  return checks;
}

bool full_sandbox_possible(const std::vector<SupportCheck>& checks) {
  for (const SupportCheck& check : checks) {
    if (check.required && !check.available) return false;
  }
  return true;
}

}  // namespace deskd::sandbox
