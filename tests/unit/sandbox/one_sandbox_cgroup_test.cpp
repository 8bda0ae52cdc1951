// A desk cgroup made for one sandbox (DeskCgroupSlot::Use::one_sandbox, what `deskd sandbox`
// uses): the sandbox runs in one instance folder per hierarchy that carries the desk's
// limits, a second sandbox of it is refused while the first runs, and nothing is left
// behind. Real sandboxes, real cgroups; skipped where this deskd gets no cgroup.

#include <fcntl.h>
#include <unistd.h>

#include <filesystem>
#include <memory>
#include <string>

#include <gtest/gtest.h>

#include "policy/confinement.h"
#include "sandbox/cgroup_limits.h"
#include "sandbox/cgroup_v1.h"
#include "sandbox/launcher.h"
#include "tests/unit/sandbox/cgroup_line.h"

namespace deskd::sandbox {
namespace {

namespace fs = std::filesystem;

fs::path one_sandbox_test_folder() {
  char pattern[] = "/var/tmp/deskd-one-sandbox-XXXXXX";
  const fs::path root = ::mkdtemp(pattern);
  fs::permissions(root, fs::perms::owner_all | fs::perms::others_read | fs::perms::others_exec);
  return root;
}

SandboxSpec one_sandbox_spec(const fs::path& root, std::uint64_t memory_bytes) {
  auto spec =
      SandboxSpecBuilder(policy::Confinement::create(root, {}).value()).memory_limit(memory_bytes).build().value();
  spec.desk_cgroup = std::make_shared<DeskCgroupSlot>(DeskCgroupSlot::Use::one_sandbox);
  return spec;
}

std::string read_to_end(int fd) {
  std::string text;
  char buffer[4096];
  for (ssize_t count; (count = ::read(fd, buffer, sizeof buffer)) > 0;)
    text.append(buffer, static_cast<std::size_t>(count));
  return text;
}

TEST(OneSandboxCgroupTest, TheSandboxRunsInOneInstanceFolderThatHoldsTheLimitsAndGoesWithIt) {
  const SupportCheck limits = check_desk_limits();
  if (!limits.available) GTEST_SKIP() << "this deskd gets no cgroup: " << limits.detail;
  const fs::path root = one_sandbox_test_folder();
  auto spec = one_sandbox_spec(root, std::uint64_t{200} << 20);
  int ends[2];
  ASSERT_EQ(::pipe2(ends, O_CLOEXEC), 0);
  // 250 MiB under a 200 MiB desk: killed at the limit the instance folder carries.
  const std::string hog = "cat /proc/self/cgroup; exec python3 -c \"b = b'\\x01' * (250 << 20)\"";
  auto process = launch_sandboxed(spec, {"/bin/bash", "-c", hog}, StandardStreams{-1, ends[1], ends[1]});
  ::close(ends[1]);
  ASSERT_TRUE(process.ok()) << process.error().what;
  const std::string text = read_to_end(ends[0]);
  ::close(ends[0]);

  // A second sandbox of the desk would share the first one's cgroup: refused.
  auto second = launch_sandboxed(spec, {"/bin/true"});
  ASSERT_FALSE(second.ok());
  EXPECT_NE(second.error().what.find("asked for a second"), std::string::npos) << second.error().what;

  const std::string line = cgroup_test::memory_cgroup_line(text);
  const std::size_t instance = line.find("/instance-");
  ASSERT_NE(instance, std::string::npos) << text;
  EXPECT_EQ(line.find("/desk-"), std::string::npos) << line;
  EXPECT_EQ(line.find("/sandbox-"), std::string::npos) << line;
  // Under v1 the sandbox sees its path from deskd's own cgroup down: the folder is there
  // until the sandbox is reaped.
  const auto memory_parent = cgroup_v1::own_folder("memory");
  const bool version1 = limits.detail.rfind("cgroup v1", 0) == 0 && memory_parent.has_value();
  const fs::path folder = version1 ? fs::path(*memory_parent) / line.substr(instance + 1) : fs::path();
  if (version1) {
    EXPECT_TRUE(fs::exists(folder)) << folder;
  }

  EXPECT_NE(process->wait().value(), 0) << "250 MiB fit under a 200 MiB desk\n" << text;
  EXPECT_GE(process->limit_hits(1024).memory_kills, 1u) << text;
  if (version1) {
    EXPECT_FALSE(fs::exists(folder)) << folder << " outlived its sandbox";
  }
  fs::remove_all(root);
}

}  // namespace
}  // namespace deskd::sandbox
