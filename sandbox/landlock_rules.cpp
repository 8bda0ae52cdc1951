#include "sandbox/landlock_rules.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>

#include "sandbox/landlock_audit.h"

namespace deskd::sandbox {
namespace {

// Debian 12's kernel headers predate several landlock ABIs, so the pieces used here are
// spelled out from the kernel's UAPI (include/uapi/linux/landlock.h).
constexpr std::uint64_t kExecute = 1ULL << 0;
constexpr std::uint64_t kWriteFile = 1ULL << 1;
constexpr std::uint64_t kReadFile = 1ULL << 2;
constexpr std::uint64_t kReadDir = 1ULL << 3;
constexpr std::uint64_t kRemoveDir = 1ULL << 4;
constexpr std::uint64_t kRemoveFile = 1ULL << 5;
constexpr std::uint64_t kMakeChar = 1ULL << 6;
constexpr std::uint64_t kMakeDir = 1ULL << 7;
constexpr std::uint64_t kMakeReg = 1ULL << 8;
constexpr std::uint64_t kMakeSock = 1ULL << 9;
constexpr std::uint64_t kMakeFifo = 1ULL << 10;
constexpr std::uint64_t kMakeBlock = 1ULL << 11;
constexpr std::uint64_t kMakeSym = 1ULL << 12;
constexpr std::uint64_t kRefer = 1ULL << 13;     // ABI 2
constexpr std::uint64_t kTruncate = 1ULL << 14;  // ABI 3
constexpr std::uint64_t kFileRights = kExecute | kWriteFile | kReadFile | kTruncate;  // what applies to a file
constexpr std::uint64_t kReadRights = kExecute | kReadFile | kReadDir;
constexpr std::uint64_t kScopeAbstractUnixSocket = 1ULL << 0;  // ABI 6
constexpr std::uint64_t kScopeSignal = 1ULL << 1;              // ABI 6
constexpr unsigned kCreateRulesetVersion = 1U << 0;
constexpr int kRulePathBeneath = 1;

struct RulesetAttributes {
  std::uint64_t handled_access_fs;
  std::uint64_t handled_access_net;  // ABI 4
  std::uint64_t scoped;              // ABI 6
};

struct [[gnu::packed]] PathBeneathAttributes {
  std::uint64_t allowed_access;
  std::int32_t parent_fd;
};

// In the minimal view, reading and executing are limited to the same view the mounts give,
// so that a mount ever undone would still show nothing more. Listing folders stays open
// everywhere: `ls /` must work, and the view's root holds only mount points.
void add_read_rules(const SandboxSpec& spec, LandlockPlan& plan) {
  plan.handled_access |= kReadRights;
  plan.rules.push_back({"/", kReadDir, false});
  std::vector<std::string> readable(std::begin(kShownSystemFolders), std::end(kShownSystemFolders));
  for (const auto& path : spec.read_only_paths) readable.push_back(path.native());
  readable.push_back(spec.confinement.desk_directory().native());
  for (const char* folder : {"/tmp", "/dev", "/proc", "/sys"}) readable.emplace_back(folder);
  for (auto& path : readable) plan.rules.push_back({std::move(path), kReadRights, false});
}

}  // namespace

LandlockSupport probe_landlock() {
  const long abi = ::syscall(SYS_landlock_create_ruleset, nullptr, 0, kCreateRulesetVersion);
  if (abi > 0) return {static_cast<int>(abi), 0};
  return {0, errno};
}

LandlockPlan plan_landlock(const SandboxSpec& spec, int abi) {
  LandlockPlan plan;
  if (abi <= 0) return plan;
  plan.abi = abi;
  std::uint64_t handled = kWriteFile | kRemoveDir | kRemoveFile | kMakeChar | kMakeDir | kMakeReg |
                          kMakeSock | kMakeFifo | kMakeBlock | kMakeSym;
  if (abi >= 2) handled |= kRefer;
  if (abi >= 3) handled |= kTruncate;
  plan.handled_access = handled;
  // Abstract Unix sockets ignore the filesystem; with the host's network they would reach
  // the host's (X11, D-Bus). Signals to processes outside the sandbox are scoped too.
  if (abi >= 6) plan.scoped = kScopeAbstractUnixSocket | kScopeSignal;

  const std::uint64_t folder_rights = handled & ~(kMakeChar | kMakeBlock);
  for (const auto& place : spec.confinement.writable_places()) {
    const bool is_file = place.kind == policy::WritablePlace::Kind::file;
    plan.rules.push_back({place.path.native(), is_file ? handled & kFileRights : folder_rights, is_file});
  }
  plan.rules.push_back({"/tmp", folder_rights, false});
  plan.rules.push_back({"/dev/shm", folder_rights, false});
  for (const char* device : {"/dev/null", "/dev/zero", "/dev/full", "/dev/tty"}) {
    plan.rules.push_back({device, handled & (kWriteFile | kTruncate), true});
  }
  plan.rules.push_back({"/dev/pts", handled & (kWriteFile | kTruncate), false});
  if (spec.host_view == HostView::minimal) add_read_rules(spec, plan);
  return plan;
}

StepResult apply_landlock(const LandlockPlan& plan) {
  constexpr const char* kStep = "apply the landlock rules";
  if (plan.abi <= 0) return step_succeeded();
  RulesetAttributes attributes{plan.handled_access, 0, plan.scoped};
  const std::size_t size = plan.abi >= 6 ? sizeof attributes
                           : plan.abi >= 4 ? 2 * sizeof(std::uint64_t)
                                           : sizeof(std::uint64_t);
  const int ruleset = static_cast<int>(::syscall(SYS_landlock_create_ruleset, &attributes, size, 0));
  if (ruleset < 0) return step_failed(kStep);
  for (const LandlockRule& rule : plan.rules) {
    // Most rules name folders: O_DIRECTORY says so without an fstat (a system call less per
    // rule on every launch); ENOTDIR means a file, which takes file rights only.
    std::uint64_t allowed = rule.allowed_access;
    int fd = ::open(rule.path.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0 && errno == ENOTDIR) {
      fd = ::open(rule.path.c_str(), O_PATH | O_CLOEXEC);
      allowed &= kFileRights;
    }
    if (fd < 0) {
      // A writable place that does not exist was not bound; nothing to allow there.
      if (errno == ENOENT) continue;
      const StepResult failed = step_failed(kStep, rule.path.c_str());
      ::close(ruleset);
      return failed;
    }
    PathBeneathAttributes beneath{allowed, fd};
    const long added = ::syscall(SYS_landlock_add_rule, ruleset, kRulePathBeneath, &beneath, 0);
    if (added != 0) {
      const StepResult failed = step_failed(kStep, rule.path.c_str());
      ::close(fd);
      ::close(ruleset);
      return failed;
    }
    ::close(fd);
  }
  if (::syscall(SYS_landlock_restrict_self, ruleset, landlock_restrict_flags(plan.abi)) != 0) {
    const StepResult failed = step_failed(kStep);
    ::close(ruleset);
    return failed;
  }
  ::close(ruleset);
  return step_succeeded();
}

}  // namespace deskd::sandbox
