// An unprivileged deskd cannot drop its supplementary groups inside a desk's user namespace
// (it must deny setgroups there to map its gid), so its desks would read what those groups
// may read (issue 26: a root:G 0640 file was read). Such a deskd refuses to launch, naming
// the groups and how to drop them, unless told the desks may keep them; a root deskd drops
// them in every sandbox and is unaffected.

#include <sys/stat.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "security/sandbox_runner.h"

namespace deskd::security_testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// A group the test gives deskd; no host user is in it. 4243: beside the test's own uid.
constexpr gid_t kSharedGroup = 4243;

class SupplementaryGroupsTest : public SandboxTest {
 protected:
  void SetUp() override {
    SandboxTest::SetUp();
    folder_ = std::make_unique<HostFolder>("/var/tmp/" + unique_name("deskd-groups"), 0);
    file_ = folder_->path() + "/group-key.pem";
    write_host_file(file_, secret_ + "\n", 0640);
    ASSERT_EQ(::chown(file_.c_str(), 0, kSharedGroup), 0);
  }
  void TearDown() override {
    folder_.reset();
    SandboxTest::TearDown();
  }

  // `cat` of the group's file in the sandbox, deskd holding the group.
  SandboxRun read_group_file(const std::vector<std::string>& extra_arguments = {}) const {
    LaunchOptions options;
    options.supplementary_groups = {kSharedGroup};
    std::vector<std::string> arguments = {"--read-only", folder_->path()};
    arguments.insert(arguments.end(), extra_arguments.begin(), extra_arguments.end());
    return sandbox({"/bin/cat", file_}, arguments, options);
  }

  std::unique_ptr<HostFolder> folder_;
  std::string file_;
  std::string secret_ = unique_name("deskd-group-secret");
};

TEST_P(SupplementaryGroupsTest, AGroupOfDeskdsNeverReachesTheDesk) {
  const SandboxRun run = read_group_file();
  EXPECT_THAT(run.out, Not(HasSubstr(secret_))) << run.describe();
  if (daemon() == Daemon::root) {
    // Root drops every supplementary group in the sandbox: the launch goes on, cat is refused.
    EXPECT_THAT(run.err, HasSubstr("Permission denied")) << run.describe();
    EXPECT_NE(run.exit_status, 0) << run.describe();
    return;
  }
  EXPECT_EQ(run.exit_status, 125) << run.describe();
  EXPECT_THAT(run.err, HasSubstr("with the supplementary group " + std::to_string(kSharedGroup) + ","))
      << run.describe();
  EXPECT_THAT(run.err, HasSubstr("SupplementaryGroups=")) << run.describe();
  EXPECT_THAT(run.err, HasSubstr("allow_supplementary_groups = true")) << run.describe();
}

TEST_P(SupplementaryGroupsTest, AllowedTheSandboxStartsAndKeepsTheGroupUnderAnUnprivilegedDeskd) {
  const SandboxRun run = read_group_file({"--allow-supplementary-groups"});
  if (daemon() == Daemon::root) {
    // The allowance changes nothing for root, which can and does drop them.
    EXPECT_THAT(run.out, Not(HasSubstr(secret_))) << run.describe();
    EXPECT_NE(run.exit_status, 0) << run.describe();
    return;
  }
  // What the allowance accepts, shown plainly: the desk reads what the group may read.
  EXPECT_EQ(run.exit_status, 0) << run.describe();
  EXPECT_THAT(run.out, HasSubstr(secret_)) << run.describe();
}

TEST_P(SupplementaryGroupsTest, WithoutGroupsNothingChanges) {
  const SandboxRun run = sandbox({"/bin/true"});
  EXPECT_EQ(run.exit_status, 0) << run.describe();
}

DESKD_FOR_BOTH_DAEMONS(SupplementaryGroupsTest);

}  // namespace
}  // namespace deskd::security_testing
