#include "sandbox/sandbox_spec.h"

#include <stdlib.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "sandbox/mount_plan.h"

namespace deskd::sandbox {
namespace {

namespace fs = std::filesystem;

class SandboxSpecTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/deskd-spec-XXXXXX";
    root_ = ::mkdtemp(pattern);
    fs::create_directories(root_ / "desk" / "notes");
    fs::create_directories(root_ / "secrets");
  }
  void TearDown() override { fs::remove_all(root_); }

  policy::Confinement confinement() {
    const fs::path hidden[] = {root_ / "secrets"};
    return policy::Confinement::create(root_ / "desk", hidden).value();
  }

  fs::path root_;
};

TEST_F(SandboxSpecTest, StartsFromSafeDefaults) {
  const auto spec = SandboxSpecBuilder(confinement()).build();
  ASSERT_TRUE(spec.ok()) << spec.error().what;
  EXPECT_EQ(spec->network, NetworkMode::none);
  EXPECT_EQ(spec->hostname, "deskd");
  EXPECT_EQ(spec->root_daemon_uid, kDefaultDeskUid);
  EXPECT_EQ(spec->host_view, HostView::minimal);
  EXPECT_EQ(spec->working_directory, root_ / "desk");
  EXPECT_EQ(spec->confinement.hidden_paths(), std::vector<fs::path>{root_ / "secrets"});
  EXPECT_EQ(spec->environment, base_environment(root_ / "desk"));
}

TEST_F(SandboxSpecTest, CollectsEveryProblemIntoOneError) {
  SandboxSpecBuilder builder(confinement());
  builder.run_as(0, 0).hostname("bad host!").memory_limit(1024).allow_environment_variable("1X");
  const auto spec = builder.build();
  ASSERT_FALSE(spec.ok());
  const std::string& what = spec.error().what;
  EXPECT_NE(what.find("uid or gid 0"), std::string::npos) << what;
  EXPECT_NE(what.find("not a hostname"), std::string::npos) << what;
  EXPECT_NE(what.find("memory limit"), std::string::npos) << what;
  EXPECT_NE(what.find("environment variable name"), std::string::npos) << what;
}

TEST_F(SandboxSpecTest, CopiesOnlyAllowedVariables) {
  ::setenv("DESKD_SPEC_TEST_ALLOWED", "yes", 1);
  ::setenv("DESKD_SPEC_TEST_SECRET", "no", 1);
  const auto spec = SandboxSpecBuilder(confinement()).allow_environment_variable("DESKD_SPEC_TEST_ALLOWED").build();
  ASSERT_TRUE(spec.ok());
  const auto& environment = spec->environment;
  EXPECT_NE(std::find(environment.begin(), environment.end(), "DESKD_SPEC_TEST_ALLOWED=yes"), environment.end());
  for (const auto& entry : environment) EXPECT_EQ(entry.find("DESKD_SPEC_TEST_SECRET"), std::string::npos);
}

TEST_F(SandboxSpecTest, AllowedVariableReplacesTheBaseOne) {
  ::setenv("TERM", "xterm", 1);
  const auto spec = SandboxSpecBuilder(confinement()).allow_environment_variable("TERM").build();
  ASSERT_TRUE(spec.ok());
  EXPECT_EQ(std::count_if(spec->environment.begin(), spec->environment.end(),
                          [](const std::string& entry) { return entry.rfind("TERM=", 0) == 0; }),
            1);
}

TEST_F(SandboxSpecTest, TheAllowlistNetworkPointsEveryProxyVariableAtTheDesksOwnProxy) {
  ::setenv("HTTPS_PROXY", "http://corporate.example:8080", 1);
  SandboxSettings settings;
  settings.network = NetworkMode::allowlist;
  settings.environment_variables = {"HTTPS_PROXY"};
  const auto spec = build_sandbox_spec(confinement(), settings);
  ASSERT_TRUE(spec.ok()) << spec.error().what;
  const auto& environment = spec->environment;
  for (const char* entry : {"HTTPS_PROXY=http://127.0.0.1:3128", "https_proxy=http://127.0.0.1:3128",
                            "HTTP_PROXY=http://127.0.0.1:3128", "http_proxy=http://127.0.0.1:3128",
                            "ALL_PROXY=http://127.0.0.1:3128", "all_proxy=http://127.0.0.1:3128",
                            "NO_PROXY=localhost,127.0.0.1,::1", "no_proxy=localhost,127.0.0.1,::1"}) {
    EXPECT_EQ(std::count(environment.begin(), environment.end(), entry), 1) << entry;
  }
  EXPECT_EQ(std::count_if(environment.begin(), environment.end(), [](const std::string& entry) {
              return entry.find("corporate.example") != std::string::npos;
            }),
            0);
  ::unsetenv("HTTPS_PROXY");
}

TEST_F(SandboxSpecTest, MountPlanMasksAfterBindingAndRebindsADeskUnderTmp) {
  const auto spec = SandboxSpecBuilder(confinement()).build();
  ASSERT_TRUE(spec.ok());
  const auto steps = plan_mounts(*spec);
  const auto position = [&](MountStep::Operation operation, const std::string& target) {
    for (std::size_t index = 0; index < steps.size(); ++index) {
      if (steps[index].operation == operation && steps[index].target == target) return index;
    }
    return steps.size();
  };
  const std::string new_root = kNewRoot;
  const auto tmp = position(MountStep::Operation::mount_tmpfs, new_root + "/tmp");
  const auto desk = position(MountStep::Operation::bind, new_root + (root_ / "desk").native());
  const auto notes = position(MountStep::Operation::bind, new_root + (root_ / "desk/notes").native());
  const auto mask = position(MountStep::Operation::mask, new_root + (root_ / "secrets").native());
  const auto pivot = position(MountStep::Operation::pivot_into_new_root, kNewRoot);
  ASSERT_LT(tmp, steps.size());
  ASSERT_LT(desk, steps.size());
  ASSERT_LT(notes, steps.size());
  ASSERT_LT(mask, steps.size());
  EXPECT_LT(tmp, desk);
  EXPECT_LT(desk, notes);
  EXPECT_LT(notes, mask);
  EXPECT_LT(mask, pivot);
  // memory/ and scratch/ do not exist, so they are not bound.
  EXPECT_EQ(position(MountStep::Operation::bind, new_root + (root_ / "desk/memory").native()), steps.size());
}

TEST_F(SandboxSpecTest, TheTmpSizeSettingSizesTmpAndDevShm) {
  SandboxSettings settings;
  settings.tmp_size_bytes = std::uint64_t{64} << 20;
  const auto spec = build_sandbox_spec(confinement(), settings);
  ASSERT_TRUE(spec.ok()) << spec.error().what;
  std::size_t sized = 0;
  for (const auto& step : plan_mounts(*spec)) {
    if (step.operation != MountStep::Operation::mount_tmpfs) continue;
    if (step.target == kNewRoot + std::string("/tmp") || step.target == kNewRoot + std::string("/dev/shm")) {
      EXPECT_THAT(step.data, ::testing::HasSubstr("size=" + std::to_string(std::uint64_t{64} << 20))) << step.target;
      ++sized;
    }
  }
  EXPECT_EQ(sized, 2u);
  settings.tmp_size_bytes = 4096;
  EXPECT_FALSE(build_sandbox_spec(confinement(), settings).ok());
}

// The full view covers people's homes: /home, /root and deskd's own user's home ($HOME
// here), but never a "home" that is the root or holds the system folders.
TEST_F(SandboxSpecTest, TheFullViewCoversHomesButNeverTheSystemFolders) {
  fs::create_directories(root_ / "daemon-home");
  char pattern[] = "/var/tmp/deskd-spec-home-XXXXXX";
  const fs::path daemon_home = ::mkdtemp(pattern);
  const char* previous = std::getenv("HOME");
  const std::string saved = previous != nullptr ? previous : "";
  ::setenv("HOME", daemon_home.c_str(), 1);
  const auto daemons_home = SandboxSpecBuilder(confinement()).host_view(HostView::full).build();
  ::setenv("HOME", (root_ / "daemon-home").c_str(), 1);
  const auto full = SandboxSpecBuilder(confinement()).host_view(HostView::full).build();
  ::setenv("HOME", "/", 1);
  const auto root_home = SandboxSpecBuilder(confinement()).host_view(HostView::full).build();
  const auto minimal = SandboxSpecBuilder(confinement()).build();
  if (previous != nullptr) ::setenv("HOME", saved.c_str(), 1);
  else ::unsetenv("HOME");
  fs::remove_all(daemon_home);
  ASSERT_TRUE(daemons_home.ok() && full.ok() && root_home.ok() && minimal.ok());
  const auto covers = [](const SandboxSpec& spec, const fs::path& path) {
    return std::find(spec.covered_homes.begin(), spec.covered_homes.end(), path) != spec.covered_homes.end();
  };
  EXPECT_TRUE(covers(*daemons_home, daemon_home));
  // Under /tmp, which the sandbox replaces anyway: nothing to cover there.
  EXPECT_FALSE(covers(*full, root_ / "daemon-home"));
  if (fs::is_directory("/home")) {
    EXPECT_TRUE(covers(*full, "/home"));
  }
  if (fs::is_directory("/root")) {
    EXPECT_TRUE(covers(*full, "/root"));
  }
  EXPECT_FALSE(covers(*root_home, "/"));
  EXPECT_TRUE(minimal->covered_homes.empty());  // the minimal view never shows them
}

TEST_F(SandboxSpecTest, AHomeCoverIsMadeBeforeTheDeskIsBoundInItAndSealedBeforeThePivot) {
  auto spec = SandboxSpecBuilder(confinement()).host_view(HostView::full).build();
  ASSERT_TRUE(spec.ok());
  // As if the desk's folder lay in a covered home.
  spec->covered_homes = {root_};
  spec->read_only_paths = {root_ / "secrets", "/usr"};
  const auto steps = plan_mounts(*spec);
  const auto position = [&](MountStep::Operation operation, const std::string& target) {
    for (std::size_t index = 0; index < steps.size(); ++index) {
      if (steps[index].operation == operation && steps[index].target == target) return index;
    }
    return steps.size();
  };
  const std::string new_root = kNewRoot;
  const auto cover = position(MountStep::Operation::mount_tmpfs, new_root + root_.native());
  const auto desk_point = position(MountStep::Operation::make_directory, new_root + (root_ / "desk").native());
  const auto desk = position(MountStep::Operation::bind, new_root + (root_ / "desk").native());
  const auto shown = position(MountStep::Operation::bind, new_root + (root_ / "secrets").native());
  const auto seal = position(MountStep::Operation::set_attributes, new_root + root_.native());
  const auto pivot = position(MountStep::Operation::pivot_into_new_root, kNewRoot);
  ASSERT_LT(cover, steps.size());
  EXPECT_LT(cover, desk_point);
  EXPECT_LT(desk_point, desk);
  EXPECT_LT(cover, shown);  // a read-only path inside the cover is bound back
  EXPECT_LT(desk, seal);
  EXPECT_LT(shown, seal);
  EXPECT_LT(seal, pivot);
  // A read-only path outside every cover is part of the full view already.
  EXPECT_EQ(position(MountStep::Operation::bind, new_root + "/usr"), steps.size());
}

TEST_F(SandboxSpecTest, EveryViewMasksTheKernelsFiguresAfterMountingProc) {
  for (const HostView view : {HostView::minimal, HostView::full}) {
    const auto spec = SandboxSpecBuilder(confinement()).host_view(view).build();
    ASSERT_TRUE(spec.ok());
    const auto steps = plan_mounts(*spec);
    const auto position = [&](MountStep::Operation operation, const std::string& target) {
      for (std::size_t index = 0; index < steps.size(); ++index) {
        if (steps[index].operation == operation && steps[index].target == target) return index;
      }
      return steps.size();
    };
    const std::string new_root = kNewRoot;
    const auto proc = position(MountStep::Operation::mount_proc, new_root + "/proc");
    const auto sys = position(MountStep::Operation::mount_sysfs, new_root + "/sys");
    const auto pivot = position(MountStep::Operation::pivot_into_new_root, kNewRoot);
    for (const char* masked : {"/proc/kcore", "/proc/keys", "/proc/cmdline", "/proc/pressure", "/sys/firmware",
                               "/sys/kernel/vmcoreinfo", "/proc/config.gz", "/proc/timer_list"}) {
      const auto mask = position(MountStep::Operation::mask, new_root + masked);
      EXPECT_LT(proc, mask) << masked;
      EXPECT_LT(sys, mask) << masked;
      EXPECT_LT(mask, pivot) << masked;
    }
    const auto read_only = position(MountStep::Operation::make_read_only_if_present, new_root + "/proc/sys");
    EXPECT_LT(proc, read_only);
    EXPECT_LT(read_only, pivot);
  }
}

}  // namespace
}  // namespace deskd::sandbox
