#include "sandbox/credentials.h"

#include <fcntl.h>
#include <grp.h>
#include <linux/capability.h>
#include <linux/securebits.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <string>

#include "base/unique_fd.h"

namespace deskd::sandbox {
namespace {

// Raw system calls, not glibc's wrappers: in a multithreaded process glibc's setgroups and
// setres[ug]id signal every other thread to change its ids too and wait for them — in the
// cloned child those threads do not exist, and the wait never ends.
int raw_setgroups_empty() { return static_cast<int>(::syscall(SYS_setgroups, 0, nullptr)); }
int raw_setresgid(gid_t gid) { return static_cast<int>(::syscall(SYS_setresgid, gid, gid, gid)); }
int raw_setresuid(uid_t uid) { return static_cast<int>(::syscall(SYS_setresuid, uid, uid, uid)); }

Result<void> write_proc_file(pid_t child, const char* name, const std::string& text) {
  const std::string path = "/proc/" + std::to_string(child) + "/" + name;
  UniqueFd fd(::open(path.c_str(), O_WRONLY | O_CLOEXEC));
  if (!fd) return Error::from_errno(errno, "Opening " + path + " to set the sandbox's ids failed");
  if (retry_on_eintr([&] { return ::write(fd.get(), text.data(), text.size()); }) !=
      static_cast<ssize_t>(text.size())) {
    return Error::from_errno(errno, "Writing '" + text.substr(0, text.size() - 1) + "' to " + path + " failed");
  }
  return success();
}

}  // namespace

IdentityPlan plan_identity(uid_t daemon_uid, gid_t daemon_gid, uid_t root_daemon_uid,
                           gid_t root_daemon_gid) {
  if (daemon_uid == 0) return IdentityPlan{root_daemon_uid, root_daemon_gid, true};
  return IdentityPlan{daemon_uid, daemon_gid, false};
}

Result<void> write_identity_maps(pid_t child, const IdentityPlan& plan) {
  // An unprivileged parent must give up setgroups before it may write gid_map; a root
  // parent keeps it, so that the child can drop root's supplementary groups.
  if (!plan.may_set_groups) DESKD_RETURN_IF_ERROR(write_proc_file(child, "setgroups", "deny\n"));
  const std::string uid_line = std::to_string(plan.uid) + " " + std::to_string(plan.uid) + " 1\n";
  const std::string gid_line = std::to_string(plan.gid) + " " + std::to_string(plan.gid) + " 1\n";
  DESKD_RETURN_IF_ERROR(write_proc_file(child, "uid_map", uid_line));
  return write_proc_file(child, "gid_map", gid_line);
}

// The highest capability this kernel knows: PR_CAPBSET_READ answers EINVAL past it. A
// binary search of a few prctl calls, once per process (libcap's cap_max_bits does the same,
// but loading libcap for it cost every launch of the lean deskd a shared library).
int last_capability() {
  static const int last = [] {
    int known = 0;        // CAP_CHOWN always exists
    int unknown = 256;    // far past any kernel's
    while (unknown - known > 1) {
      const int middle = (known + unknown) / 2;
      if (::prctl(PR_CAPBSET_READ, middle, 0, 0, 0) >= 0) known = middle;
      else unknown = middle;
    }
    return known > 0 ? known : CAP_LAST_CAP;
  }();
  return last;
}

StepResult become_sandbox_identity(const IdentityPlan& plan) {
  if (plan.may_set_groups && raw_setgroups_empty() != 0) return step_failed("drop the supplementary groups");
  if (::prctl(PR_SET_KEEPCAPS, 1, 0, 0, 0) != 0) return step_failed("keep capabilities across the id switch");
  if (raw_setresgid(plan.gid) != 0) return step_failed("switch to the sandbox's gid");
  if (raw_setresuid(plan.uid) != 0) return step_failed("switch to the sandbox's uid");
  // A uid switch may clear the effective set (it keeps the permitted one under KEEPCAPS);
  // raise the effective set back to the permitted one for the mount steps.
  __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3] = {};
  if (::syscall(SYS_capget, &header, data) != 0) return step_failed("read the capabilities");
  for (auto& word : data) word.effective = word.permitted;
  if (::syscall(SYS_capset, &header, data) != 0) return step_failed("raise the effective capabilities");
  return step_succeeded();
}

StepResult drop_privileges(const IdentityPlan& plan, int last_capability_number) {
  // Locked securebits: no capability regained through uid 0, setuid fixups, kept caps or
  // ambient raises — for this process and everything it executes.
  const unsigned long securebits =
      SECBIT_NOROOT | SECBIT_NOROOT_LOCKED | SECBIT_NO_SETUID_FIXUP | SECBIT_NO_SETUID_FIXUP_LOCKED |
      SECBIT_KEEP_CAPS_LOCKED | SECBIT_NO_CAP_AMBIENT_RAISE | SECBIT_NO_CAP_AMBIENT_RAISE_LOCKED;
  if (::prctl(PR_SET_SECUREBITS, securebits, 0, 0, 0) != 0) return step_failed("lock the securebits");
  for (int capability = 0; capability <= last_capability_number; ++capability) {
    if (::prctl(PR_CAPBSET_DROP, capability, 0, 0, 0) != 0 && errno != EINVAL) {
      return step_failed("drop the capability bounding set");
    }
  }
  if (::prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) != 0 && errno != EINVAL) {
    return step_failed("clear the ambient capabilities");
  }
  if (plan.may_set_groups && raw_setgroups_empty() != 0) return step_failed("drop the supplementary groups");
  if (raw_setresgid(plan.gid) != 0) return step_failed("switch to the sandbox's gid");
  if (raw_setresuid(plan.uid) != 0) return step_failed("switch to the sandbox's uid");
  __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3] = {};
  if (::syscall(SYS_capset, &header, data) != 0) return step_failed("empty the capability sets");
  if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return step_failed("set no_new_privs");
  return step_succeeded();
}

}  // namespace deskd::sandbox
