// The config keys of one world per desk: the sandbox's read-only paths, host view and CPU
// limit, a desk's hostname, and the range of uids handed to desks under a root deskd.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "runner/config/config.h"
#include "unit/config/config_test_support.h"

namespace deskd::app {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;
using testing::ConfigTest;
using testing::kAlpha;

namespace fs = std::filesystem;

TEST_F(ConfigTest, SupplementaryGroupsAreRefusedUnlessTheSandboxTableAllowsThem) {
  const Config config = valid(R"([sandbox]
allow_supplementary_groups = true
[[desk]]
name = "alpha"
directory = "desks/alpha"
[[desk]]
name = "beta"
directory = "desks/beta"
[desk.sandbox]
allow_supplementary_groups = false
)");
  EXPECT_TRUE(config.sandbox.allow_supplementary_groups);
  ASSERT_EQ(config.desks.size(), 2u);
  EXPECT_TRUE(config.desks[0].sandbox.allow_supplementary_groups);
  EXPECT_FALSE(config.desks[1].sandbox.allow_supplementary_groups);
  const Config plain = valid(R"([[desk]]
name = "alpha"
directory = "desks/alpha"
)");
  EXPECT_FALSE(plain.desks[0].sandbox.allow_supplementary_groups);
}

TEST_F(ConfigTest, TheSandboxsViewKeysAreReadAndADeskMayOverrideThem) {
  fs::create_directories(root_ / "shared");
  fs::create_symlink(root_ / "shared", root_ / "shared-link");
  // In the full view the desk's own uid must be able to search the way to beta's folder.
  fs::permissions(root_, fs::perms::owner_all | fs::perms::group_exec | fs::perms::others_exec);
  const Config config = valid(R"([sandbox]
cpus = 1.5
tmp_mb = 64
host_view = "full"
read_only_paths = ["shared-link", "replies.jsonl", "shared"]
[[desk]]
name = "alpha"
directory = "desks/alpha"
hostname = "alpha.desks"
[desk.sandbox]
cpus = 0.25
host_view = "minimal"
read_only_paths = ["skills"]
[[desk]]
name = "beta"
directory = "desks/beta"
)");
  EXPECT_EQ(config.sandbox.cpus, 1.5);
  EXPECT_EQ(config.sandbox.tmp_size_bytes, std::uint64_t{64} << 20);
  EXPECT_EQ(config.sandbox.host_view, sandbox::HostView::full);
  // Resolved, and each once.
  EXPECT_EQ(config.sandbox.read_only_paths, (std::vector<fs::path>{root_ / "shared", root_ / "replies.jsonl"}));
  ASSERT_EQ(config.desks.size(), 2u);
  const DeskConfig& alpha = config.desks[0];
  EXPECT_EQ(alpha.sandbox.hostname, "alpha.desks");
  EXPECT_EQ(alpha.sandbox.cpus, 0.25);
  EXPECT_EQ(alpha.sandbox.host_view, sandbox::HostView::minimal);
  // A desk's list replaces [sandbox]'s.
  EXPECT_EQ(alpha.sandbox.read_only_paths, (std::vector<fs::path>{root_ / "skills"}));
  const DeskConfig& beta = config.desks[1];
  EXPECT_EQ(beta.sandbox.hostname, "beta");
  EXPECT_EQ(beta.sandbox.cpus, 1.5);
  EXPECT_EQ(beta.sandbox.host_view, sandbox::HostView::full);
  EXPECT_EQ(beta.sandbox.read_only_paths, config.sandbox.read_only_paths);
}

TEST_F(ConfigTest, TheNewKeysHaveDefaults) {
  const Config config = valid(R"([[desk]]
name = "nifty_50"
directory = "desks/alpha"
)");
  EXPECT_EQ(config.runner.desk_uid_first, 1879048192u);
  EXPECT_EQ(config.runner.desk_uid_count, 65536u);
  EXPECT_FALSE(config.sandbox.cpus);
  EXPECT_EQ(config.sandbox.host_view, sandbox::HostView::minimal);
  EXPECT_THAT(config.sandbox.read_only_paths, IsEmpty());
  ASSERT_EQ(config.desks.size(), 1u);
  // A hostname may not hold '_'.
  EXPECT_EQ(config.desks[0].sandbox.hostname, "nifty-50");
  EXPECT_THAT(config.desks[0].readable_desks, IsEmpty());
}

TEST_F(ConfigTest, WrongViewKeysAreRefused) {
  EXPECT_THAT(problems(parse(R"([sandbox]
cpus = 0
host_view = "everything"
read_only_paths = ["missing", "/", "/run/user", "/tmp", "/proc/1"]
[[desk]]
name = "alpha"
directory = "desks/alpha"
hostname = "alpha_desk"
[desk.sandbox]
cpus = 5000
[[desk]]
name = "beta"
directory = "desks/beta"
hostname = ""
)")),
              ElementsAre("2:8: 'cpus' must be at least 0.01",
                          "3:13: 'host_view' must be one of minimal, full, not 'everything'",
                          "4:20: the read-only path " + (root_ / "missing").native() + " does not exist",
                          "4:31: the read-only path / would show the whole host; write host_view = \"full\" for that",
                          "4:36: the read-only path /run/user lies in /run, which the sandbox makes up itself so "
                          "that no host device or Unix socket is reachable; name a folder elsewhere",
                          "4:49: the read-only path /tmp would cover the sandbox's own /tmp; name a folder inside "
                          "it instead",
                          "4:57: the read-only path /proc/1 lies in /proc, which the sandbox makes up itself so that "
                          "no host device or Unix socket is reachable; name a folder elsewhere",
                          "8:12: 'hostname' must be 1 to 64 letters, digits, '-' or '.', not 'alpha_desk'",
                          "10:8: 'cpus' must be at most 4096",
                          "14:12: 'hostname' must be 1 to 64 letters, digits, '-' or '.', not ''"));
}

TEST_F(ConfigTest, TheDeskUidRangeIsRead) {
  const Config config = valid("[runner]\ndesk_uid_first = 200000\ndesk_uid_count = 2\n" + std::string(kAlpha));
  EXPECT_EQ(config.runner.desk_uid_first, 200000u);
  EXPECT_EQ(config.runner.desk_uid_count, 2u);
  // The highest range there is ends at 4294967294.
  const Config top = valid("[runner]\ndesk_uid_first = 4294967293\ndesk_uid_count = 2\n" + std::string(kAlpha));
  EXPECT_EQ(top.runner.desk_uid_first, 4294967293u);
}

TEST_F(ConfigTest, AWrongDeskUidRangeIsRefused) {
  EXPECT_THAT(problems(parse("[runner]\ndesk_uid_first = 0\ndesk_uid_count = 0\n" + std::string(kAlpha))),
              ElementsAre("2:18: 'desk_uid_first' must be at least 1", "3:18: 'desk_uid_count' must be at least 1"));
  EXPECT_THAT(problems(parse("[runner]\ndesk_uid_first = 4294967290\ndesk_uid_count = 10\n" + std::string(kAlpha))),
              ElementsAre("3:18: the desk uid range 4294967290...4294967299 ('desk_uid_first', 'desk_uid_count') "
                          "goes past 4294967294, the highest user id; lower 'desk_uid_first' or 'desk_uid_count'"));
  EXPECT_THAT(problems(parse("[runner]\ndesk_uid_first = 60000\n" + std::string(kAlpha))),
              ElementsAre("2:18: the desk uid range 60000...125535 ('desk_uid_first', 'desk_uid_count') holds "
                          "65534, the id the kernel shows for unmapped users ('nobody'); start the range past it "
                          "(the default start is 1879048192)"));
  EXPECT_THAT(problems(parse(R"([runner]
desk_uid_count = 1
[[desk]]
name = "alpha"
directory = "desks/alpha"
[[desk]]
name = "beta"
directory = "desks/beta"
)")),
              ElementsAre("2:18: 'desk_uid_count' is 1, fewer than the 2 desks of this config; every desk needs a "
                          "uid of its own"));
}

// How many subagents a desk may run at once: 4 unless said, 0 takes the tool away, and
// more than SubagentBoard::kMaximumLimit (16) is refused.
TEST_F(ConfigTest, MaximumSubagentsIsReadAndBounded) {
  EXPECT_EQ(valid(kAlpha).desks[0].maximum_subagents, 4u);
  EXPECT_EQ(valid(std::string(kAlpha) + "maximum_subagents = 0\n").desks[0].maximum_subagents, 0u);
  const auto refused = problems(parse(std::string(kAlpha) + "maximum_subagents = 17\n"));
  ASSERT_EQ(refused.size(), 1u);
  EXPECT_THAT(refused[0], ::testing::HasSubstr("'maximum_subagents' must be at most 16"));
}

TEST_F(ConfigTest, TheAllowlistNetworkReadsItsHostsAndLimitsAndADeskListReplacesTheDefault) {
  const Config config = valid(R"([sandbox]
network = "allowlist"
allowed_hosts = ["api.kite.trade:443", "*.nseindia.com", "10.20.0.0/16"]
egress_connections = 8
egress_mb = 256
egress_idle_seconds = 30
[[desk]]
name = "alpha"
directory = "desks/alpha"
[desk.sandbox]
allowed_hosts = ["data.example.com"]
[[desk]]
name = "beta"
directory = "desks/beta"
)");
  EXPECT_EQ(config.sandbox.network, sandbox::NetworkMode::allowlist);
  EXPECT_EQ(config.sandbox.egress.connections, 8u);
  EXPECT_EQ(config.sandbox.egress.bytes, std::uint64_t{256} << 20);
  EXPECT_EQ(config.sandbox.egress.idle_seconds, 30u);
  ASSERT_EQ(config.desks.size(), 2u);
  EXPECT_THAT(config.desks[0].sandbox.allowed_hosts, ElementsAre("data.example.com"));
  EXPECT_EQ(config.desks[0].sandbox.network, sandbox::NetworkMode::allowlist);
  EXPECT_THAT(config.desks[1].sandbox.allowed_hosts, ElementsAre("api.kite.trade:443", "*.nseindia.com", "10.20.0.0/16"));
}

TEST_F(ConfigTest, AnOpenTunnelIsClosedAfterFiveSilentMinutesUnlessSaid) {
  EXPECT_EQ(valid(kAlpha).sandbox.egress.idle_seconds, 300u);
  const auto refused = problems(parse(std::string("[sandbox]\negress_idle_seconds = 86401\n") + kAlpha));
  ASSERT_EQ(refused.size(), 1u);
  EXPECT_THAT(refused[0], ::testing::HasSubstr("'egress_idle_seconds' must be at most 86400"));
}

TEST_F(ConfigTest, ABadHostPatternIsReportedAtItsOwnLineAndColumn) {
  auto load = parse(std::string(R"([sandbox]
network = "allowlist"
allowed_hosts = ["api.kite.trade",
                 "*.com", "ok.example.com:99999"]
egress_connections = 0
egress_idle_seconds = 0
)") + kAlpha);
  EXPECT_THAT(problems(load),
              ElementsAre("4:18: 'allowed_hosts': '*.com' is not a host pattern: a wildcard needs at least two labels after '*.'",
                          "4:27: 'allowed_hosts': 'ok.example.com:99999' is not a host pattern: the port must be a number "
                          "from 1 to 65535",
                          "5:22: 'egress_connections' must be at least 1",
                          "6:23: 'egress_idle_seconds' must be at least 1"));
}

}  // namespace
}  // namespace deskd::app
