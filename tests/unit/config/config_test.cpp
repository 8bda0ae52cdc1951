// The daemon's config: every field read, defaults kept, paths resolved from the config's
// folder, the daemon's own paths hidden from every desk, desk overrides, schedules, and
// deskd check.

#include "runner/app/deskd_command.h"
#include "runner/config/config.h"

#include <stdlib.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "runner/config/config_values.h"
#include "unit/config/config_test_support.h"

namespace deskd::app {
namespace {

using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;
using testing::ConfigTest;
using testing::kAlpha;

namespace fs = std::filesystem;


TEST_F(ConfigTest, AFullConfigSetsEveryField) {
  write("api.key", "sk-test\n");
  write("ca.pem", "-----BEGIN CERTIFICATE-----\n");
  const Config config = valid(R"([runner]
state_folder = "state"
socket = "state/deskd.sock"
socket_group = "deskd"
allowed_uids = [1000, 1001]
allowed_groups = ["deskd", "traders"]
log_level = "debug"
shutdown_grace_seconds = 2.5
client_buffer_mb = 16
max_clients = 32

[model]
provider = "anthropic"
model = "claude-sonnet-4-5"
base_url = "https://example.test/v1"
api_key_file = "api.key"
api_key_variable = "ANTHROPIC_API_KEY"
ca_file = "ca.pem"
max_tokens = 4096
temperature = 0.2
connect_timeout_seconds = 5
idle_timeout_seconds = 60
max_retries = 2
context_window = 100000
compaction_share = 0.75
[model.prices."claude-sonnet-4-5"]
input = 3.0
output = 15
cache_read = 0.3
cache_write = 3.75

[sandbox]
network = "host"
memory_mb = 2048
processes = 256
file_size_mb = 1024
open_files = 512
hidden_paths = ["/etc/deskd-test-secrets"]
environment = ["LANG", "TZ"]

[[desk]]
name = "alpha"
directory = "desks/alpha"
mode = "live"
timeout_seconds = 30.5
maximum_output_characters = 1000
stall_timeout_seconds = 60
catch_up_minutes = 15
hidden_paths = ["desks/alpha/secrets"]
skills = "skills"
market_holidays = "holidays.txt"
[[desk.schedule]]
name = "pre-open"
time = "09:05"
days = ["mon", "tue", "wed", "thu", "fri"]
market_days_only = true
text = "Check the pre-open book."
)");
  EXPECT_EQ(config.file, file());
  EXPECT_EQ(config.runner.state_folder, root_ / "state");
  EXPECT_EQ(config.runner.socket_path, root_ / "state/deskd.sock");
  EXPECT_EQ(config.runner.socket_group, "deskd");
  EXPECT_EQ(config.runner.allowed_uids, (std::vector<std::uint32_t>{1000, 1001}));
  EXPECT_EQ(config.runner.allowed_groups, (std::vector<std::string>{"deskd", "traders"}));
  EXPECT_EQ(config.runner.log_level, "debug");
  EXPECT_EQ(config.runner.shutdown_grace, std::chrono::milliseconds(2500));
  EXPECT_EQ(config.runner.client_buffer_mb, 16u);
  EXPECT_EQ(config.runner.max_clients, 32u);

  const ModelConfig& model = config.model;
  EXPECT_EQ(model.provider, "anthropic");
  EXPECT_EQ(model.model, "claude-sonnet-4-5");
  EXPECT_EQ(model.base_url, "https://example.test/v1");
  EXPECT_EQ(model.api_key_file, root_ / "api.key");
  EXPECT_EQ(model.api_key_variable, "ANTHROPIC_API_KEY");
  EXPECT_EQ(model.ca_file, root_ / "ca.pem");
  EXPECT_EQ(model.max_tokens, 4096u);
  EXPECT_EQ(model.temperature, 0.2);
  EXPECT_EQ(model.connect_timeout, std::chrono::seconds(5));
  EXPECT_EQ(model.idle_timeout, std::chrono::seconds(60));
  EXPECT_EQ(model.max_retries, 2u);
  EXPECT_EQ(model.context_window, 100000u);
  EXPECT_EQ(model.compaction_share, 0.75);
  ASSERT_EQ(model.prices.size(), 1u);
  const ModelPrice& price = model.prices.at("claude-sonnet-4-5");
  EXPECT_EQ(price.input, 3.0);
  EXPECT_EQ(price.output, 15.0);
  EXPECT_EQ(price.cache_read, 0.3);
  EXPECT_EQ(price.cache_write, 3.75);

  const SandboxConfig& sandbox = config.sandbox;
  EXPECT_EQ(sandbox.network, sandbox::NetworkMode::host);
  EXPECT_EQ(sandbox.memory_bytes, std::uint64_t{2048} << 20);
  EXPECT_EQ(sandbox.processes, 256u);
  EXPECT_EQ(sandbox.file_size_bytes, std::uint64_t{1024} << 20);
  EXPECT_EQ(sandbox.open_files, 512u);
  EXPECT_EQ(sandbox.environment_variables, (std::vector<std::string>{"LANG", "TZ"}));

  ASSERT_EQ(config.desks.size(), 1u);
  const DeskConfig& desk = config.desks[0];
  EXPECT_EQ(desk.name, "alpha");
  EXPECT_EQ(desk.position.line, 41u);
  EXPECT_EQ(desk.position.column, 1u);
  EXPECT_EQ(desk.directory, root_ / "desks/alpha");
  EXPECT_EQ(desk.mode, "live");
  EXPECT_EQ(desk.timeout_seconds, 30.5);
  EXPECT_EQ(desk.maximum_output_characters, 1000u);
  EXPECT_EQ(desk.stall_timeout, std::chrono::seconds(60));
  EXPECT_EQ(desk.catch_up_window, std::chrono::minutes(15));
  EXPECT_EQ(desk.skills_folder, root_ / "skills");
  EXPECT_EQ(desk.market_holidays, root_ / "holidays.txt");
  // Its own, [sandbox]'s, then the daemon's: state folder, socket, web socket, API key file.
  EXPECT_EQ(desk.hidden_paths, (std::vector<fs::path>{root_ / "desks/alpha/secrets", "/etc/deskd-test-secrets",
                                                      root_ / "state", root_ / "state/deskd.sock",
                                                      root_ / "state/web.sock", root_ / "api.key"}));
  EXPECT_EQ(desk.sandbox.network, sandbox::NetworkMode::host);
  EXPECT_EQ(desk.model.model, "claude-sonnet-4-5");
  ASSERT_EQ(desk.schedules.size(), 1u);
  const desk::Schedule& schedule = desk.schedules[0];
  EXPECT_EQ(schedule.name, "pre-open");
  EXPECT_EQ(schedule.hour, 9);
  EXPECT_EQ(schedule.minute, 5);
  EXPECT_EQ(schedule.second, 0);
  EXPECT_EQ(schedule.days, (std::array<bool, 7>{false, true, true, true, true, true, false}));
  EXPECT_TRUE(schedule.market_days_only);
  EXPECT_EQ(schedule.text, "Check the pre-open book.");
}

TEST_F(ConfigTest, WhatTheFileLeavesOutKeepsItsDefault) {
  const Config config = valid(kAlpha);
  EXPECT_EQ(config.runner.state_folder, "/var/lib/deskd");
  EXPECT_EQ(config.runner.socket_path, "/run/deskd/deskd.sock");
  EXPECT_FALSE(config.runner.socket_group);
  EXPECT_THAT(config.runner.allowed_uids, IsEmpty());
  EXPECT_EQ(config.runner.log_level, "info");
  EXPECT_EQ(config.runner.shutdown_grace, std::chrono::seconds(10));
  EXPECT_EQ(config.runner.client_buffer_mb, 8u);
  EXPECT_EQ(config.runner.max_clients, 256u);
  EXPECT_EQ(config.model.provider, "script");
  EXPECT_FALSE(config.model.script);
  EXPECT_FALSE(config.model.temperature);
  EXPECT_EQ(config.model.max_tokens, 8192u);
  EXPECT_EQ(config.model.compaction_share, 0.8);
  EXPECT_EQ(config.sandbox.network, sandbox::NetworkMode::none);
  EXPECT_FALSE(config.sandbox.memory_bytes);
  EXPECT_FALSE(config.sandbox.processes);
  EXPECT_EQ(config.sandbox.disk_quota_bytes, sandbox::kDefaultDiskQuotaBytes);

  ASSERT_EQ(config.desks.size(), 1u);
  const DeskConfig& desk = config.desks[0];
  EXPECT_EQ(desk.mode, "dry_run");
  EXPECT_EQ(desk.timeout_seconds, 120);
  EXPECT_EQ(desk.maximum_output_characters, 20000u);
  EXPECT_EQ(desk.stall_timeout, std::chrono::minutes(5));
  EXPECT_EQ(desk.catch_up_window, std::chrono::minutes(30));
  EXPECT_FALSE(desk.skills_folder);
  EXPECT_FALSE(desk.market_holidays);
  EXPECT_THAT(desk.schedules, IsEmpty());
  // The default state folder and socket are hidden like written ones.
  EXPECT_EQ(desk.hidden_paths, (std::vector<fs::path>{"/var/lib/deskd", "/run/deskd/deskd.sock",
                                   "/run/deskd/web.sock"}));
}

TEST_F(ConfigTest, DiskQuotaNoneIsTheOneWayToADeskWithoutAQuota) {
  const Config none = valid(std::string("[sandbox]\ndisk_quota_mb = \"none\"\n") + kAlpha +
                            "[desk.sandbox]\ninode_quota = 100\n");
  EXPECT_FALSE(none.desks[0].sandbox.disk_quota_bytes) << "[desk.sandbox] starts as a copy of [sandbox]";
  const Config own = valid(std::string("[sandbox]\ndisk_quota_mb = \"none\"\n") + kAlpha +
                           "[desk.sandbox]\ndisk_quota_mb = 64\n");
  EXPECT_EQ(own.desks[0].sandbox.disk_quota_bytes, std::uint64_t{64} << 20);
  EXPECT_THAT(problems(parse(std::string("[sandbox]\ndisk_quota_mb = \"lots\"\n") + kAlpha)),
              ElementsAre("2:17: 'disk_quota_mb' must be a whole number of MiB or \"none\", not 'lots'"));
}

TEST_F(ConfigTest, AnIdleTerminalClosesAfterHalfAnHourUnlessTheDeskSaysOtherwise) {
  EXPECT_EQ(valid(kAlpha).desks[0].idle_terminal, std::chrono::minutes(30));
  EXPECT_EQ(valid(std::string(kAlpha) + "idle_terminal_minutes = 2.5\n").desks[0].idle_terminal,
            std::chrono::seconds(150));
  EXPECT_EQ(valid(std::string(kAlpha) + "idle_terminal_minutes = 0\n").desks[0].idle_terminal,
            std::chrono::milliseconds(0));
  EXPECT_THAT(problems(parse(std::string(kAlpha) + "idle_terminal_minutes = -1\n")),
              ElementsAre("4:25: 'idle_terminal_minutes' must be at least 0"));
  EXPECT_THAT(problems(parse(std::string(kAlpha) + "idle_terminal_minutes = \"soon\"\n")),
              ElementsAre("4:25: 'idle_terminal_minutes' must be a number"));
}

TEST_F(ConfigTest, RelativePathsStartAtTheConfigFolderNotTheCurrentOne) {
  fs::create_directories(root_ / "elsewhere");
  fs::create_symlink(root_ / "desks/beta", root_ / "beta-link");
  const fs::path previous = fs::current_path();
  fs::current_path(root_ / "elsewhere");
  const Config config = valid(R"([runner]
state_folder = "./state/../state"
[model]
script = "replies.jsonl"
[[desk]]
name = "alpha"
directory = "desks/alpha/"
hidden_paths = ["desks/alpha/secrets"]
[[desk]]
name = "beta"
directory = "beta-link"
)");
  fs::current_path(previous);
  EXPECT_EQ(config.runner.state_folder, root_ / "state");
  EXPECT_EQ(config.model.script, root_ / "replies.jsonl");
  ASSERT_EQ(config.desks.size(), 2u);
  EXPECT_EQ(config.desks[0].directory, root_ / "desks/alpha");
  EXPECT_EQ(config.desks[0].hidden_paths.front(), root_ / "desks/alpha/secrets");
  // Links are followed, so the sandbox and the checks see where the folder really is.
  EXPECT_EQ(config.desks[1].directory, root_ / "desks/beta");
}

TEST_F(ConfigTest, TheDaemonsPathsAreHiddenFromEveryDesk) {
  write("global.key", "k\n");
  write("beta.key", "k\n");
  write("ca.pem", "c\n");
  const Config config = valid(R"([runner]
state_folder = "state"
socket = "run/deskd.sock"
[model]
api_key_file = "global.key"
ca_file = "ca.pem"
[[desk]]
name = "alpha"
directory = "desks/alpha"
[[desk]]
name = "beta"
directory = "desks/beta"
[desk.model]
provider = "openai"
model = "gpt-4.1"
api_key_file = "beta.key"
)");
  ASSERT_EQ(config.desks.size(), 2u);
  for (const auto& desk : config.desks) {
    EXPECT_THAT(desk.hidden_paths, Contains(root_ / "state")) << desk.name;
    EXPECT_THAT(desk.hidden_paths, Contains(root_ / "run/deskd.sock")) << desk.name;
    EXPECT_THAT(desk.hidden_paths, Contains(root_ / "global.key")) << desk.name;
    // Another desk's key is as secret as one's own.
    EXPECT_THAT(desk.hidden_paths, Contains(root_ / "beta.key")) << desk.name;
    EXPECT_THAT(desk.hidden_paths, Not(Contains(root_ / "ca.pem"))) << desk.name;
  }
  EXPECT_EQ(config.desks[1].model.api_key_file, root_ / "beta.key");
}

TEST_F(ConfigTest, ADeskStartsFromTheDefaultsAndOverridesThem) {
  const Config config = valid(R"([model]
model = "base"
max_tokens = 1000
[model.prices.base]
input = 1
output = 2
[sandbox]
network = "host"
memory_mb = 1024
hidden_paths = ["/srv/shared-secret"]
environment = ["LANG"]
[[desk]]
name = "alpha"
directory = "desks/alpha"
hidden_paths = ["/srv/alpha-secret", "/srv/shared-secret"]
[desk.model]
model = "special"
[desk.model.prices.base]
output = 5
[desk.sandbox]
memory_mb = 512
hidden_paths = ["/srv/alpha-sandbox-secret"]
environment = ["TZ"]
[[desk]]
name = "beta"
directory = "desks/beta"
)");
  ASSERT_EQ(config.desks.size(), 2u);
  const DeskConfig& alpha = config.desks[0];
  EXPECT_EQ(alpha.model.model, "special");
  EXPECT_EQ(alpha.model.max_tokens, 1000u);
  EXPECT_EQ(alpha.model.prices.at("base").input, 1.0);
  EXPECT_EQ(alpha.model.prices.at("base").output, 5.0);
  EXPECT_EQ(alpha.sandbox.network, sandbox::NetworkMode::host);
  EXPECT_EQ(alpha.sandbox.memory_bytes, std::uint64_t{512} << 20);
  EXPECT_EQ(alpha.sandbox.environment_variables, (std::vector<std::string>{"TZ"}));
  // A desk's sandbox hidden paths add to [sandbox]'s; duplicates are dropped; then the
  // daemon's paths. The other desk's folder is out of alpha's sight (the minimal
  // view), so it needs no mask (DesksAreStrangersByDefault has the full view's).
  EXPECT_EQ(alpha.hidden_paths,
            (std::vector<fs::path>{"/srv/alpha-secret", "/srv/shared-secret", "/srv/alpha-sandbox-secret",
                                   "/var/lib/deskd", "/run/deskd/deskd.sock",
                                   "/run/deskd/web.sock"}));
  EXPECT_FALSE(in_sight(alpha, root_ / "desks/beta"));

  const DeskConfig& beta = config.desks[1];
  EXPECT_EQ(beta.model.model, "base");
  EXPECT_EQ(beta.model.prices.at("base").output, 2.0);
  EXPECT_EQ(beta.sandbox.memory_bytes, std::uint64_t{1024} << 20);
  EXPECT_EQ(beta.sandbox.environment_variables, (std::vector<std::string>{"LANG"}));
  // Alpha's folder and alpha's own hidden paths are out of beta's sight too.
  EXPECT_EQ(beta.hidden_paths, (std::vector<fs::path>{"/srv/shared-secret", "/var/lib/deskd", "/run/deskd/deskd.sock",
                                   "/run/deskd/web.sock"}));
  // The defaults themselves are left as written.
  EXPECT_EQ(config.model.model, "base");
  EXPECT_EQ(config.sandbox.memory_bytes, std::uint64_t{1024} << 20);
}

TEST_F(ConfigTest, ScheduleTimesAndDaysAreParsed) {
  const Config config = valid(std::string(kAlpha) + R"([[desk.schedule]]
name = "a"
time = "9:05"
text = "t"
[[desk.schedule]]
name = "b"
time = "23:59:59"
days = ["Sat", "sunday", "SUN"]
text = "t"
[[desk.schedule]]
name = "c"
time = 07:30:15
text = "t"
)");
  ASSERT_EQ(config.desks.size(), 1u);
  const auto& schedules = config.desks[0].schedules;
  ASSERT_EQ(schedules.size(), 3u);
  EXPECT_EQ((std::array<int, 3>{schedules[0].hour, schedules[0].minute, schedules[0].second}),
            (std::array<int, 3>{9, 5, 0}));
  EXPECT_EQ(schedules[0].days, (std::array<bool, 7>{true, true, true, true, true, true, true}));
  EXPECT_EQ((std::array<int, 3>{schedules[1].hour, schedules[1].minute, schedules[1].second}),
            (std::array<int, 3>{23, 59, 59}));
  EXPECT_EQ(schedules[1].days, (std::array<bool, 7>{true, false, false, false, false, false, true}));
  EXPECT_FALSE(schedules[1].market_days_only);
  EXPECT_EQ((std::array<int, 3>{schedules[2].hour, schedules[2].minute, schedules[2].second}),
            (std::array<int, 3>{7, 30, 15}));
}

TEST(ConfigValuesTest, TimeOfDay) {
  using config_detail::parse_time_of_day;
  EXPECT_EQ(parse_time_of_day("09:05"), (std::array<int, 3>{9, 5, 0}));
  EXPECT_EQ(parse_time_of_day("0:00"), (std::array<int, 3>{0, 0, 0}));
  EXPECT_EQ(parse_time_of_day("15:30:59"), (std::array<int, 3>{15, 30, 59}));
  for (const char* bad : {"", "9", "24:00", "09:60", "09:00:60", "9:5", "009:00", "09:00:00:00", "09-00", " 9:00",
                          "+9:00", "09:0a"}) {
    EXPECT_FALSE(parse_time_of_day(bad)) << bad;
  }
}

TEST(ConfigValuesTest, WeekdaysAndNames) {
  using config_detail::parse_weekday;
  EXPECT_EQ(parse_weekday("sun"), 0u);
  EXPECT_EQ(parse_weekday("Monday"), 1u);
  EXPECT_EQ(parse_weekday("SAT"), 6u);
  EXPECT_FALSE(parse_weekday("mo"));
  EXPECT_FALSE(parse_weekday("mondays"));
  EXPECT_TRUE(config_detail::is_desk_name("nifty_50-desk"));
  EXPECT_FALSE(config_detail::is_desk_name(""));
  EXPECT_FALSE(config_detail::is_desk_name(std::string(65, 'a')));
  EXPECT_FALSE(config_detail::is_desk_name("../x"));
}

TEST(ConfigProblemTest, PrintsLikeACompiler) {
  EXPECT_EQ((ConfigProblem{{"deskd.toml", 12, 3}, "unknown key 'nmae' in [[desk]]"}).to_string(),
            "deskd.toml:12:3: unknown key 'nmae' in [[desk]]");
  EXPECT_EQ((ConfigProblem{{"deskd.toml", 0, 0}, "no desk"}).to_string(), "deskd.toml: no desk");
}

TEST(LoadConfigTest, AMissingFileIsOneProblem) {
  const auto load = load_config("/var/tmp/deskd-no-such-config.toml");
  EXPECT_FALSE(load.config);
  ASSERT_EQ(load.problems.size(), 1u);
  EXPECT_EQ(load.problems[0].to_string(),
            "/var/tmp/deskd-no-such-config.toml: the config cannot be opened: No such file or directory");
}

TEST(LoadConfigTest, TheExampleConfigHasNoProblem) {
  const auto load = load_config(DESKD_SOURCE_DIR "/examples/deskd.toml");
  std::vector<std::string> found;
  for (const auto& problem : load.problems) found.push_back(problem.to_string());
  EXPECT_THAT(found, IsEmpty());
  ASSERT_TRUE(load.config);
  ASSERT_EQ(load.config->desks.size(), 2u);
  EXPECT_EQ(load.config->desks[0].name, "nifty");
  EXPECT_EQ(load.config->desks[1].name, "banknifty");
  const fs::path secrets = fs::canonical(DESKD_SOURCE_DIR "/examples/secrets");
  for (const auto& desk : load.config->desks) EXPECT_THAT(desk.hidden_paths, Contains(secrets)) << desk.name;
  // banknifty may read nifty's folder; nifty may not read banknifty's.
  const auto& nifty = load.config->desks[0];
  const auto& banknifty = load.config->desks[1];
  EXPECT_EQ(banknifty.readable_desk_folders, (std::vector<fs::path>{nifty.directory}));
  EXPECT_THAT(banknifty.hidden_paths, Not(Contains(nifty.directory)));
  EXPECT_FALSE(in_sight(nifty, banknifty.directory));  // in the minimal view: nothing to mask
}

TEST(CheckCommandTest, ExitsZeroForAGoodConfigAndTwoOtherwise) {
  const std::string example = DESKD_SOURCE_DIR "/examples/deskd.toml";
  EXPECT_EQ(run_deskd_command_line({"check", "--config", example}), 0);
  EXPECT_EQ(run_deskd_command_line({"check", "--config", "/var/tmp/deskd-no-such-config.toml"}), 2);
  EXPECT_EQ(run_deskd_command_line({"check", "--config"}), 2);
  EXPECT_EQ(run_deskd_command_line({"check", "--config", example, "extra"}), 2);
  EXPECT_EQ(run_deskd_command_line({"check", "--config", example, "--config", example}), 2);
}

TEST(CheckCommandTest, WithoutConfigChecksTheDefaultFile) {
  // /etc/deskd/deskd.toml: ok when it is there and good, else 2 with a sentence naming it.
  std::error_code error;
  if (std::filesystem::exists(kDefaultConfigPath, error)) GTEST_SKIP() << "this host has a " << kDefaultConfigPath;
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(run_deskd_command_line({"check"}), 2);
  EXPECT_THAT(::testing::internal::GetCapturedStderr(),
              HasSubstr("the default config /etc/deskd/deskd.toml does not exist; give --config FILE."));
}

}  // namespace
}  // namespace deskd::app
