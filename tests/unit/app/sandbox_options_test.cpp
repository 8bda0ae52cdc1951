// The options `deskd sandbox`, `deskd shell` and `deskd mcp` share: each taken with its
// value, malformed values refused with a sentence, unknown arguments left to the command.

#include "runner/app/sandbox_options.h"

#include <stdlib.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <boost/asio/system_executor.hpp>

#include <filesystem>

#include "runner/app/desk_tool_options.h"
#include "sandbox/sandbox_keys.h"

namespace deskd::app {
namespace {

using ::testing::HasSubstr;

// Takes every argument as an option, as a command's loop does; the first refusal, or "".
template <typename Options, typename Take>
std::string take_all(std::vector<std::string_view> arguments, Options& options, Take take) {
  for (std::size_t index = 0; index < arguments.size(); ++index) {
    auto taken = take(std::span<const std::string_view>(arguments), index, options);
    if (!taken.ok()) return taken.error().what;
    if (!*taken) return "not mine: " + std::string(arguments[index]);
  }
  return "";
}

std::string take_sandbox(std::vector<std::string_view> arguments, SandboxOptions& options) {
  return take_all(std::move(arguments), options, take_sandbox_option);
}

TEST(SandboxOptionsTest, TakesEveryOptionWithItsValue) {
  SandboxOptions options;
  EXPECT_EQ(take_sandbox({"--desk", "/d", "--hide", "/s", "--hide", "/t", "--net", "host", "--memory", "512M",
                          "--pids", "64", "--file-size", "1G", "--open-files", "100", "--uid", "1000", "--gid",
                          "1001", "--hostname", "box", "--env", "LANG", "--env", "TERM", "--read-only", "/srv/data",
                          "--host-view", "full"},
                         options),
            "");
  EXPECT_EQ(options.desk_directory, std::filesystem::path("/d"));
  EXPECT_EQ(options.hidden_paths, (std::vector<std::filesystem::path>{"/s", "/t"}));
  EXPECT_EQ(options.settings.network, sandbox::NetworkMode::host);
  EXPECT_EQ(options.settings.memory_bytes, std::uint64_t{512} << 20);
  EXPECT_EQ(options.settings.processes, 64u);
  EXPECT_EQ(options.settings.file_size_bytes, std::uint64_t{1} << 30);
  EXPECT_EQ(options.settings.open_files, 100u);
  EXPECT_EQ(options.settings.uid, 1000u);
  EXPECT_EQ(options.settings.gid, 1001u);
  EXPECT_EQ(options.settings.hostname, "box");
  EXPECT_EQ(options.settings.environment_variables, (std::vector<std::string>{"LANG", "TERM"}));
  EXPECT_EQ(options.settings.read_only_paths, (std::vector<std::filesystem::path>{"/srv/data"}));
  EXPECT_EQ(options.settings.host_view, sandbox::HostView::full);
}

TEST(SandboxOptionsTest, ARelativeHiddenPathStartsAtTheCurrentFolder) {
  SandboxOptions options;
  EXPECT_EQ(take_sandbox({"--hide", "secret.txt"}, options), "");
  EXPECT_EQ(options.hidden_paths.front(), std::filesystem::current_path() / "secret.txt");
}

TEST(SandboxOptionsTest, RefusesMissingAndMalformedValues) {
  SandboxOptions options;
  EXPECT_EQ(take_sandbox({"--desk"}, options), "--desk needs a value.");
  EXPECT_EQ(take_sandbox({"--net", "wifi"}, options), "--net must be none, host or allowlist, not 'wifi'.");
  EXPECT_EQ(take_sandbox({"--memory", "lots"}, options), "--memory needs a size such as 512M, not 'lots'.");
  EXPECT_EQ(take_sandbox({"--pids", "-1"}, options), "--pids needs a number, not '-1'.");
  EXPECT_EQ(take_sandbox({"--uid", "root"}, options), "--uid needs a host id, not 'root'.");
  EXPECT_EQ(take_sandbox({"--host-view", "half"}, options), "--host-view must be minimal or full, not 'half'.");
}

TEST(SandboxOptionsTest, LeavesOtherArgumentsToTheCommand) {
  SandboxOptions options;
  EXPECT_EQ(take_sandbox({"--json"}, options), "not mine: --json");
  EXPECT_EQ(take_sandbox({"--timeout", "5"}, options), "not mine: --timeout");
  EXPECT_EQ(take_sandbox({"ls"}, options), "not mine: ls");
}

TEST(SandboxOptionsTest, BuildingRefusesAMissingDeskFolder) {
  SandboxOptions options;
  options.desk_directory = "/nonexistent/deskd/desk";
  auto spec = build_sandbox_spec(options);
  ASSERT_FALSE(spec.ok());
  EXPECT_THAT(spec.error().what, HasSubstr("/nonexistent/deskd/desk"));
}

TEST(DeskToolOptionsTest, TakesTheToolOptionsBesideTheSandboxOnes) {
  DeskToolOptions options;
  EXPECT_EQ(take_all({"--desk", "/d", "--timeout", "0.5", "--max-output", "100", "--proposals", "/p", "--net", "none"},
                     options, take_desk_tool_option),
            "");
  EXPECT_EQ(options.sandbox.desk_directory, std::filesystem::path("/d"));
  EXPECT_EQ(options.timeout_seconds, 0.5);
  EXPECT_EQ(options.maximum_output_characters, 100u);
  EXPECT_EQ(options.proposals_folder, std::filesystem::path("/p"));
  EXPECT_EQ(options.sandbox.settings.network, sandbox::NetworkMode::none);
}

TEST(DeskToolOptionsTest, RefusesBadToolValues) {
  DeskToolOptions options;
  for (const char* seconds : {"0", "-1", "soon", "", "nan", "inf", "1e999"}) {
    EXPECT_THAT(take_all({"--timeout", seconds}, options, take_desk_tool_option),
                HasSubstr("--timeout needs a number of seconds above 0"))
        << seconds;
  }
  EXPECT_THAT(take_all({"--max-output", "0"}, options, take_desk_tool_option), HasSubstr("above 0"));
  EXPECT_EQ(take_all({"--proposals"}, options, take_desk_tool_option), "--proposals needs a value.");
  EXPECT_EQ(take_all({"--json"}, options, take_desk_tool_option), "not mine: --json");
}

TEST(DeskToolOptionsTest, TheDeskIsRequired) {
  auto settings = build_desk_tool_settings(DeskToolOptions{}, boost::asio::system_executor());
  ASSERT_FALSE(settings.ok());
  EXPECT_EQ(settings.error().what, "--desk DIR is required.");
}

TEST(DeskToolOptionsTest, RefusesAProposalsFolderTheDeskCanWrite) {
  char pattern[] = "/var/tmp/deskd-options-XXXXXX";
  const std::filesystem::path desk = ::mkdtemp(pattern);
  DeskToolOptions options;
  options.sandbox.desk_directory = desk;
  options.proposals_folder = desk / "notes" / "proposals";
  auto settings = build_desk_tool_settings(options, boost::asio::system_executor());
  ASSERT_FALSE(settings.ok());
  EXPECT_THAT(settings.error().what, HasSubstr("is inside the desk's writable places"));

  options.proposals_folder = desk.parent_path() / (desk.filename().string() + "-proposals");
  settings = build_desk_tool_settings(options, boost::asio::system_executor());
  ASSERT_TRUE(settings.ok()) << settings.error().what;
  EXPECT_EQ(settings->desk_name, desk.filename().string());
  EXPECT_NE(settings->proposals, nullptr);
  EXPECT_TRUE(std::filesystem::is_directory(*options.proposals_folder));
  std::filesystem::remove_all(*options.proposals_folder);
  std::filesystem::remove_all(desk);
}

TEST(SandboxOptionsTest, TheAllowlistNetworkTakesItsHostsAndRefusesABadOne) {
  SandboxOptions options;
  EXPECT_EQ(take_sandbox({"--net", "allowlist", "--allow", "api.example.com:443", "--allow", "*.example.org"}, options), "");
  EXPECT_EQ(options.settings.network, sandbox::NetworkMode::allowlist);
  EXPECT_EQ(options.settings.allowed_hosts, (std::vector<std::string>{"api.example.com:443", "*.example.org"}));
  EXPECT_THAT(take_sandbox({"--allow", "*"}, options), HasSubstr("--allow: '*' is not a host pattern"));
}

TEST(SandboxOptionsTest, AnAllowListWithoutTheAllowlistNetworkIsRefusedNotIgnored) {
  for (const char* network : {"none", "host"}) {
    SandboxOptions options;
    ASSERT_EQ(take_sandbox({"--net", network, "--allow", "api.example.com"}, options), "");
    const auto checked = check_sandbox_options(options);
    ASSERT_FALSE(checked.ok()) << network;
    EXPECT_THAT(checked.error().what, HasSubstr("--allow limits a sandbox only under --net allowlist")) << network;
    EXPECT_THAT(checked.error().what, HasSubstr("so the list would be ignored")) << network;
    const auto spec = build_sandbox_spec(options);
    ASSERT_FALSE(spec.ok()) << network;
    EXPECT_EQ(spec.error().what, checked.error().what);
  }
  SandboxOptions options;
  ASSERT_EQ(take_sandbox({"--allow", "api.example.com"}, options), "");
  EXPECT_FALSE(check_sandbox_options(options).ok()) << "no --net is no network";
  ASSERT_EQ(take_sandbox({"--net", "allowlist"}, options), "");
  EXPECT_TRUE(check_sandbox_options(options).ok());
}

TEST(SandboxOptionsTest, TheCpuAndEgressLimitsHaveFlagsAndTheirBounds) {
  SandboxOptions options;
  EXPECT_EQ(take_sandbox({"--cpus", "1.5", "--net", "allowlist", "--egress-connections", "8", "--egress-size", "1G",
                          "--egress-idle", "60"},
                         options),
            "");
  EXPECT_EQ(options.settings.cpus, 1.5);
  EXPECT_EQ(options.settings.egress.connections, 8u);
  EXPECT_EQ(options.settings.egress.bytes, std::uint64_t{1} << 30);
  EXPECT_EQ(options.settings.egress.idle_seconds, 60u);
  EXPECT_TRUE(check_sandbox_options(options).ok());
  // The bounds are the config's, from the one key table.
  EXPECT_EQ(take_sandbox({"--cpus", "0"}, options), "--cpus needs a number of CPUs from 0.01 to 4096, not '0'.");
  EXPECT_EQ(take_sandbox({"--egress-connections", "5000"}, options),
            "--egress-connections must be 1 to 4096, not '5000'.");
  EXPECT_EQ(take_sandbox({"--memory", "1M"}, options), "--memory must be 16 to 1099511627776 MiB, not '1M'.");
  EXPECT_THAT(take_sandbox({"--env", "1X"}, options), HasSubstr("--env: '1X' is not an environment variable name"));
}

TEST(SandboxOptionsTest, EgressLimitsWithoutTheAllowlistNetworkAreRefusedNotIgnored) {
  SandboxOptions options;
  ASSERT_EQ(take_sandbox({"--egress-idle", "60"}, options), "");
  const auto checked = check_sandbox_options(options);
  ASSERT_FALSE(checked.ok());
  EXPECT_THAT(checked.error().what, HasSubstr("add --net allowlist"));
}

TEST(SandboxOptionsTest, EveryKeyTableFlagIsACommandLineOptionAndInTheHelp) {
  const std::string help = sandbox_options_help();
  for (const sandbox::SandboxKey& row : sandbox::sandbox_keys()) {
    if (row.flag.empty()) {
      EXPECT_FALSE(row.only_here_because.empty()) << row.key << " has no flag and says not why";
      continue;
    }
    if (row.key.empty()) {
      EXPECT_FALSE(row.only_here_because.empty()) << row.flag << " has no key and says not why";
    }
    EXPECT_THAT(help, HasSubstr(std::string(row.flag) + " ")) << row.flag;
    SandboxOptions options;
    std::size_t index = 0;
    const std::string_view arguments[] = {row.flag, "1"};
    // Taken (or refused for its value, "1" being no network mode): never left to the command.
    const auto taken = take_sandbox_option(arguments, index, options);
    EXPECT_TRUE(!taken.ok() || *taken) << row.flag;
  }
}

}  // namespace
}  // namespace deskd::app
