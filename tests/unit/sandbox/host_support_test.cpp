// check_host_support() probes the real kernel. On the machines deskd targets (Linux 6.x,
// run as root or as an ordinary user) every isolation piece but cgroup delegation is
// there; optional pieces are only asserted where the kernel is new enough to have them.

#include "sandbox/host_support.h"
#include "sandbox/cgroup_limits.h"
#include "sandbox/landlock_rules.h"
#include "sandbox/own_user_namespace.h"

#include <gmock/gmock.h>
#include <grp.h>
#include <gtest/gtest.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <functional>
#include <iterator>
#include <string>
#include <vector>

namespace {

using deskd::sandbox::check_host_support;
using deskd::sandbox::full_sandbox_possible;
using deskd::sandbox::SupportCheck;

const SupportCheck& find_check(const std::vector<SupportCheck>& checks, const std::string& name) {
  for (const auto& check : checks) {
    if (check.name == name) return check;
  }
  static const SupportCheck none{"(absent)", false, false, "", ""};
  ADD_FAILURE() << "no check named " << name;
  return none;
}

// The running kernel's major.minor as one comparable number, e.g. 6.18 -> 618.
int kernel_version() {
  utsname names{};
  uname(&names);
  int major = 0;
  int minor = 0;
  std::sscanf(names.release, "%d.%d", &major, &minor);
  return major * 100 + minor;
}

TEST(HostSupport, ReportsTheChecksInAStableOrder) {
  std::vector<std::string> names;
  std::vector<bool> required;
  for (const auto& check : check_host_support()) {
    names.push_back(check.name);
    required.push_back(check.required);
  }
  EXPECT_THAT(names, testing::ElementsAre("user namespaces", "mount namespace", "seccomp", "landlock",
                                          "cgroup v2 delegation", "openat2", "pidfd", "mount_setattr",
                                          "syscall refusal reports", "landlock refusal reports"));
  EXPECT_THAT(required, testing::ElementsAre(true, true, true, false, false, false, false, true, false, false));
}

TEST(HostSupport, EveryCheckHasADetailAndEveryMissingOneAFix) {
  for (const auto& check : check_host_support()) {
    EXPECT_FALSE(check.detail.empty()) << check.name;
    if (check.available) {
      EXPECT_TRUE(check.fix.empty()) << check.name << ": " << check.fix;
    } else {
      EXPECT_FALSE(check.fix.empty()) << check.name << ": " << check.detail;
    }
  }
}

TEST(HostSupport, ThisHostCanStartAFullSandbox) {
  const auto checks = check_host_support();
  for (const char* name : {"user namespaces", "mount namespace", "seccomp", "mount_setattr"}) {
    const auto& check = find_check(checks, name);
    EXPECT_TRUE(check.available) << name << ": " << check.detail;
  }
  EXPECT_TRUE(full_sandbox_possible(checks));
}

TEST(HostSupport, ThisKernelHasTheOptionalPiecesOfItsVersion) {
  const auto checks = check_host_support();
  const int version = kernel_version();
  const struct {
    const char* name;
    int since;
  } pieces[] = {{"pidfd", 503}, {"openat2", 506}, {"landlock", 513}};
  for (const auto& piece : pieces) {
    if (version < piece.since) continue;
    const auto& check = find_check(checks, piece.name);
    EXPECT_TRUE(check.available) << piece.name << ": " << check.detail;
  }
}

TEST(HostSupport, LandlockDetailNamesTheAbiVersion) {
  // The one probe of the kernel's landlock, shared by doctor and the launcher.
  const int abi = deskd::sandbox::kernel_landlock_abi();
  const auto checks = check_host_support();
  const auto& check = find_check(checks, "landlock");
  EXPECT_EQ(check.available, abi > 0);
  if (abi > 0) {
    EXPECT_EQ(check.detail, "ABI " + std::to_string(abi));
  }
}

TEST(HostSupport, CgroupCheckAgreesWithTheDelegatedDirectory) {
  const auto directory = deskd::sandbox::delegated_cgroup_directory();
  const auto checks = check_host_support();
  const auto& check = find_check(checks, "cgroup v2 delegation");
  EXPECT_EQ(check.available, directory.has_value());
  if (directory) {
    EXPECT_THAT(check.detail, testing::HasSubstr(*directory));
  } else {
    EXPECT_THAT(check.detail, testing::HasSubstr("resource limits use rlimits only"));
  }
}

// On a hybrid host a sandbox joins its v1 cgroup through `tasks`, which never waits for an
// RCU grace period: the per-desk limits line no longer asks for a favordynmods remount.
TEST(HostSupport, TheV1LimitsLineAsksForNoFavordynmodsRemount) {
  const auto check = deskd::sandbox::check_desk_limits();
  if (check.detail.rfind("cgroup v1", 0) != 0)
    GTEST_SKIP() << "the per-desk limits are not cgroup v1 here: " << check.detail;
  EXPECT_THAT(check.detail, testing::Not(testing::HasSubstr("favordynmods")));
}

TEST(HostSupport, FullSandboxNeedsEveryRequiredCheckOnly) {
  const SupportCheck required_ok{"a", true, true, "ok", ""};
  const SupportCheck required_missing{"b", false, true, "no", "fix b"};
  const SupportCheck optional_missing{"c", false, false, "no", "fix c"};
  const SupportCheck optional_ok{"d", true, false, "ok", ""};
  EXPECT_TRUE(full_sandbox_possible({}));
  EXPECT_TRUE(full_sandbox_possible({required_ok, optional_ok}));
  EXPECT_TRUE(full_sandbox_possible({required_ok, optional_missing}));
  EXPECT_FALSE(full_sandbox_possible({required_ok, required_missing, optional_ok}));
  EXPECT_FALSE(full_sandbox_possible({optional_missing, required_missing}));
}

// What `work` returns, run in a forked child (whose credentials and namespaces it may
// change for good), and whether the child exited 0.
struct ChildReport {
  std::string text;
  bool exited_cleanly = false;
};
ChildReport report_from_child(const std::function<std::string()>& work) {
  int pipe_fds[2];
  if (pipe(pipe_fds) != 0) return {"pipe failed", false};
  const pid_t child = fork();
  if (child < 0) return {"fork failed", false};
  if (child == 0) {
    close(pipe_fds[0]);
    const std::string text = work();
    (void)!write(pipe_fds[1], text.data(), text.size());
    _exit(0);
  }
  close(pipe_fds[1]);
  ChildReport report;
  char buffer[4096];
  for (ssize_t got; (got = read(pipe_fds[0], buffer, sizeof buffer)) > 0;)
    report.text.append(buffer, static_cast<std::size_t>(got));
  close(pipe_fds[0]);
  int status = 0;
  report.exited_cleanly = waitpid(child, &status, 0) == child && WIFEXITED(status) && WEXITSTATUS(status) == 0;
  return report;
}

// deskd must work as an ordinary user. As root, a forked child drops to uid 65534 and runs
// the checks itself, reporting through a pipe.
TEST(HostSupport, AnUnprivilegedUserHasUserAndMountNamespaces) {
  if (geteuid() != 0) GTEST_SKIP() << "already unprivileged: the other tests cover this user";
  const ChildReport child = report_from_child([] {
    if (setgroups(0, nullptr) != 0 || setgid(65534) != 0 || setuid(65534) != 0)
      return std::string("could not drop to uid 65534");
    // As a daemon exec'd by an ordinary user would be: dumpable, so /proc/self is its own.
    prctl(PR_SET_DUMPABLE, 1, 0, 0, 0);
    std::string text;
    for (const auto& check : check_host_support()) {
      text += check.name + "=" + (check.available ? "yes" : "no: " + check.detail) + "\n";
    }
    return text;
  });
  const std::string& report = child.text;
  ASSERT_TRUE(child.exited_cleanly) << report;
  EXPECT_THAT(report, testing::HasSubstr("user namespaces=yes\n"));
  EXPECT_THAT(report, testing::HasSubstr("mount namespace=yes\n"));
  EXPECT_THAT(report, testing::HasSubstr("seccomp=yes\n"));
  EXPECT_THAT(report, testing::HasSubstr("mount_setattr=yes\n"));
}

TEST(HostSupport, RootReportsWhetherAnUnprivilegedDeskdCouldWork) {
  if (geteuid() != 0) GTEST_SKIP() << "only root probes uid 65534 as well";
  const auto checks = check_host_support();
  const auto& check = find_check(checks, "user namespaces");
  ASSERT_TRUE(check.available) << check.detail;
  EXPECT_THAT(check.detail, testing::AnyOf(testing::HasSubstr("so can uid 65534"),
                                           testing::HasSubstr("an unprivileged deskd could not")));
}

}  // namespace

namespace {

using deskd::sandbox::own_user_namespace;

TEST(OwnUserNamespace, TheHostsMapsEveryIdToItselfAndANewOneDoesNot) {
  auto here = own_user_namespace();
  ASSERT_TRUE(here.ok()) << here.error().what;
  // The suite runs on the host (CI, a developer's shell), never in a container of its own.
  EXPECT_TRUE(here->host) << here->uid_map;
  EXPECT_EQ(here->uid_map, "0 0 4294967295");

  const uid_t uid = geteuid();
  const ChildReport child = report_from_child([uid] {
    if (unshare(CLONE_NEWUSER) != 0) return std::string("unshare failed");
    // Only the id the process had is mapped, as a rootless container maps its user; not
    // to root inside, since a namespace whose root is the host's root counts as the host's.
    FILE* map = std::fopen("/proc/self/uid_map", "w");
    if (map != nullptr) {
      std::fprintf(map, "1000 %u 1\n", uid);
      std::fclose(map);
    }
    auto inside = own_user_namespace();
    return inside.ok() ? (inside->host ? "host " : "own ") + inside->uid_map : inside.error().what;
  });
  EXPECT_TRUE(child.exited_cleanly);
  EXPECT_EQ(child.text, "own 1000 " + std::to_string(uid) + " 1");
}

}  // namespace
