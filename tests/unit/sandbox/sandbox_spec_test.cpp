#include "sandbox/sandbox_spec.h"

#include <stdlib.h>

#include <filesystem>

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
  EXPECT_EQ(spec->hidden_paths, std::vector<fs::path>{root_ / "secrets"});
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

TEST_F(SandboxSpecTest, ExtraHiddenPathsAreResolvedAndMayNotHoldTheDesk) {
  fs::create_symlink(root_ / "secrets", root_ / "link");
  auto spec = SandboxSpecBuilder(confinement()).hide(root_ / "link").build();
  ASSERT_TRUE(spec.ok());
  EXPECT_EQ(spec->hidden_paths.size(), 1u);  // the link resolves to the same folder
  spec = SandboxSpecBuilder(confinement()).hide(root_).build();
  ASSERT_FALSE(spec.ok());
  EXPECT_NE(spec.error().what.find("holds the desk folder"), std::string::npos);
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

}  // namespace
}  // namespace deskd::sandbox
