// A desk that holds its memory cgroup at the limit while one of its sandboxes starts must not
// get deskd killed. A child that shares deskd's memory is ranked by the cgroup's OOM killer
// with deskd's whole memory map, and once chosen the kernel kills every process sharing the
// map; tmpfs pages count against the cgroup but in no process's RSS, so that child would be
// the one chosen (launcher.cpp, sharing_memory_is_safe). This test process stands in for
// deskd: it launches the sandboxes, and it must live through the second one's start.

#include <stdlib.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "policy/confinement.h"
#include "sandbox/cgroup_instance.h"
#include "sandbox/cgroup_limits.h"
#include "sandbox/host_support.h"
#include "sandbox/launcher.h"
#include "sandbox/sandbox_spec.h"
#include "tests/unit/sandbox/cgroup_line.h"
#include "tests/unit/sandbox/pipe_text.h"

namespace deskd::sandbox {
namespace {

namespace fs = std::filesystem;

std::uint64_t number_in(const fs::path& file) {
  std::ifstream in(file);
  std::uint64_t value = 0;
  in >> value;
  return value;
}

TEST(DeskOomTest, ADeskHoldingItsCgroupAtTheLimitWhileItsSandboxStartsDoesNotGetDeskdKilled) {
  const SupportCheck limits = check_desk_limits();
  if (!limits.available) GTEST_SKIP() << "this deskd gets no cgroup: " << limits.detail;
  char pattern[] = "/var/tmp/deskd-desk-oom-XXXXXX";
  ASSERT_NE(::mkdtemp(pattern), nullptr);
  const fs::path root = pattern;
  fs::permissions(root, fs::perms::owner_all | fs::perms::others_read | fs::perms::others_exec);
  auto spec = SandboxSpecBuilder(policy::Confinement::create(root, {}).value())
                  .memory_limit(std::uint64_t{64} << 20)
                  .build()
                  .value();

  // The first sandbox fills 40 MiB of tmpfs, which stays charged to the desk while it sleeps.
  int ends[2];
  ASSERT_EQ(::pipe2(ends, O_CLOEXEC), 0);
  auto filler = launch_sandboxed(
      spec, {"/bin/sh", "-c", "head -c 41943040 /dev/zero > /dev/shm/fill && cat /proc/self/cgroup && echo filled && "
                              "exec sleep 120"},
      StandardStreams{-1, ends[1], ends[1]});
  ::close(ends[1]);
  ASSERT_TRUE(filler.ok()) << filler.error().what;
  const std::string said = pipe_test::read_until(ends[0], "filled");
  ::close(ends[0]);
  ASSERT_NE(said.find("filled"), std::string::npos) << said;

  // The desk's memory cgroup is the sandbox's parent: its limit goes to just above what it
  // holds now, so that the next sandbox's set-up meets the limit.
  // The sandbox sees its cgroup from its own cgroup namespace, rooted where this process is.
  const std::string line = cgroup_test::memory_cgroup_line(said);
  ASSERT_FALSE(line.empty()) << said;
  std::ifstream own_file("/proc/self/cgroup");
  const std::string own_text((std::istreambuf_iterator<char>(own_file)), std::istreambuf_iterator<char>());
  const std::string own = cgroup_test::memory_cgroup_line(own_text);
  const bool version2 = line.rfind("0::", 0) == 0;
  const auto path_of = [](const std::string& cgroup_line) { return cgroup_line.substr(cgroup_line.find(":/") + 2); };
  const fs::path sandbox_folder =
      fs::path(version2 ? "/sys/fs/cgroup" : "/sys/fs/cgroup/memory") / path_of(own) / path_of(line);
  const fs::path desk_folder = sandbox_folder.parent_path();
  const fs::path usage = desk_folder / (version2 ? "memory.current" : "memory.usage_in_bytes");
  const fs::path limit = desk_folder / (version2 ? "memory.max" : "memory.limit_in_bytes");

  // Five starts of a second sandbox of the desk into the full cgroup, the limit each time
  // lowered to what the desk holds once what the last start freed is gone: the set-up's first
  // charge meets it. Whatever the OOM killer picks, this process lives on, and each launch
  // succeeds or fails and says so.
  for (int round = 0; round < 5; ++round) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    Result<void> held = success();
    for (int attempt = 0; attempt < 20; ++attempt) {
      held = cgroup_instance::write_file(limit, std::to_string(number_in(usage)));
      if (held.ok()) break;
    }
    ASSERT_TRUE(held.ok()) << held.error().what;
    auto second = launch_sandboxed(spec, {"true"});
    if (second.ok()) (void)second->wait();
  }
  SUCCEED() << "deskd's stand-in lived through five starts into a full desk cgroup";
  filler->close();
  std::error_code ignored;
  fs::remove_all(root, ignored);
}

}  // namespace
}  // namespace deskd::sandbox
