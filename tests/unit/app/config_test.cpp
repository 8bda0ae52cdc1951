// The daemon's config: every field read, defaults kept, every problem reported at once at
// its file:line:column, paths resolved from the config's folder, and the daemon's own
// paths hidden from every desk.

#include "runner/app/config.h"

#include <stdlib.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "runner/app/config_values.h"

namespace deskd::app {
namespace {

using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;

namespace fs = std::filesystem;

// Two desks, a script, a holiday list and a skills folder under a fresh /var/tmp folder;
// the config itself is parsed from a string as if it were <root>/deskd.toml.
class ConfigTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/var/tmp/deskd-config-test-XXXXXX";
    ASSERT_NE(::mkdtemp(pattern), nullptr);
    root_ = fs::canonical(pattern);
    for (const char* desk : {"desks/alpha", "desks/beta"}) {
      fs::create_directories(root_ / desk / "memory");
      fs::create_directories(root_ / desk / "notes");
      fs::create_directories(root_ / desk / "scratch");
      write(std::string(desk) + "/Memory.md", "# Memory\n");
    }
    fs::create_directories(root_ / "skills");
    write("replies.jsonl", "{\"text\": \"hello\"}\n");
    write("holidays.txt", "2026-01-26 Republic Day\n");
  }
  void TearDown() override { fs::remove_all(root_); }

  void write(const std::string& relative, const std::string& text) const {
    std::ofstream(root_ / relative) << text;
  }
  fs::path file() const { return root_ / "deskd.toml"; }
  ConfigLoad parse(std::string_view text) const { return parse_config(text, file()); }

  // Each problem as "line:column: message", the file name checked and left out.
  std::vector<std::string> problems(const ConfigLoad& load) const {
    std::vector<std::string> lines;
    for (const auto& problem : load.problems) {
      EXPECT_EQ(problem.position.file, file());
      lines.push_back(std::to_string(problem.position.line) + ":" + std::to_string(problem.position.column) + ": " +
                      problem.message);
    }
    return lines;
  }
  // The config of `text`, which must have no problem.
  Config valid(std::string_view text) const {
    auto load = parse(text);
    EXPECT_THAT(problems(load), IsEmpty());
    return load.config.value_or(Config{});
  }

  fs::path root_;
};

constexpr const char* kAlpha = "[[desk]]\nname = \"alpha\"\ndirectory = \"desks/alpha\"\n";

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
  EXPECT_EQ(sandbox.hidden_paths, (std::vector<fs::path>{"/etc/deskd-test-secrets"}));
  EXPECT_EQ(sandbox.environment_variables, (std::vector<std::string>{"LANG", "TZ"}));

  ASSERT_EQ(config.desks.size(), 1u);
  const DeskConfig& desk = config.desks[0];
  EXPECT_EQ(desk.name, "alpha");
  EXPECT_EQ(desk.position.line, 39u);
  EXPECT_EQ(desk.position.column, 1u);
  EXPECT_EQ(desk.directory, root_ / "desks/alpha");
  EXPECT_EQ(desk.mode, "live");
  EXPECT_EQ(desk.timeout_seconds, 30.5);
  EXPECT_EQ(desk.maximum_output_characters, 1000u);
  EXPECT_EQ(desk.stall_timeout, std::chrono::seconds(60));
  EXPECT_EQ(desk.catch_up_window, std::chrono::minutes(15));
  EXPECT_EQ(desk.skills_folder, root_ / "skills");
  EXPECT_EQ(desk.market_holidays, root_ / "holidays.txt");
  // Its own, [sandbox]'s, then the daemon's: state folder, socket, API key file.
  EXPECT_EQ(desk.hidden_paths, (std::vector<fs::path>{root_ / "desks/alpha/secrets", "/etc/deskd-test-secrets",
                                                      root_ / "state", root_ / "state/deskd.sock",
                                                      root_ / "api.key"}));
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
  EXPECT_EQ(config.model.provider, "script");
  EXPECT_FALSE(config.model.script);
  EXPECT_FALSE(config.model.temperature);
  EXPECT_EQ(config.model.max_tokens, 8192u);
  EXPECT_EQ(config.model.compaction_share, 0.8);
  EXPECT_EQ(config.sandbox.network, sandbox::NetworkMode::none);
  EXPECT_FALSE(config.sandbox.memory_bytes);
  EXPECT_FALSE(config.sandbox.processes);

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
  EXPECT_EQ(desk.hidden_paths, (std::vector<fs::path>{"/var/lib/deskd", "/run/deskd/deskd.sock"}));
}

TEST_F(ConfigTest, ASyntaxErrorNamesItsPosition) {
  auto load = parse("[runner]\nlog_level = \"info\"\nstate_folder = \n");
  EXPECT_FALSE(load.config);
  ASSERT_EQ(load.problems.size(), 1u);
  EXPECT_EQ(load.problems[0].position.line, 3u);
  EXPECT_EQ(load.problems[0].position.column, 16u);
  EXPECT_THAT(load.problems[0].message, HasSubstr("value"));
}

TEST_F(ConfigTest, AnUnknownKeyNamesItsTable) {
  EXPECT_THAT(problems(parse(R"([runer]
[model]
providr = "script"
[model.prices."m"]
inptu = 1
[sandbox]
memory = 5
[[desk]]
nmae = "alpha"
name = "alpha"
directory = "desks/alpha"
[desk.sandbox]
netwrk = "none"
[desk.model]
temp = 1
[[desk.schedule]]
name = "s"
time = "09:00"
text = "t"
txet = "t"
)")),
              ElementsAre("1:2: unknown key 'runer' at the top level", "3:1: unknown key 'providr' in [model]",
                          "5:1: unknown key 'inptu' in [model.prices.\"m\"]", "7:1: unknown key 'memory' in [sandbox]",
                          "9:1: unknown key 'nmae' in [[desk]]", "13:1: unknown key 'netwrk' in [desk.sandbox]",
                          "15:1: unknown key 'temp' in [desk.model]",
                          "20:1: unknown key 'txet' in [[desk.schedule]]"));
}

TEST_F(ConfigTest, AWrongTypeIsReportedAtTheValue) {
  EXPECT_THAT(problems(parse(R"([runner]
log_level = 3
allowed_uids = [1000, "bob", -1]
[sandbox]
hidden_paths = "secrets"
[[desk]]
name = "alpha"
directory = "desks/alpha"
timeout_seconds = "long"
maximum_output_characters = 2.5
[[desk.schedule]]
name = "s"
time = 905
market_days_only = "yes"
text = "t"
)")),
              ElementsAre("2:13: 'log_level' must be a string",
                          "3:23: 'allowed_uids' must hold user ids (whole numbers from 0 to 4294967294)",
                          "3:30: 'allowed_uids' must hold user ids (whole numbers from 0 to 4294967294)",
                          "5:16: 'hidden_paths' must be an array of strings (paths)",
                          "9:19: 'timeout_seconds' must be a number",
                          "10:29: 'maximum_output_characters' must be a whole number",
                          "13:8: 'time' must be a string such as \"09:05\" (India time)",
                          "14:20: 'market_days_only' must be true or false"));
}

TEST_F(ConfigTest, AValueOutOfRangeIsRefused) {
  EXPECT_THAT(problems(parse(R"([runner]
log_level = "loud"
[model]
provider = "gemini"
compaction_share = 0
temperature = -1
[sandbox]
network = "bridge"
memory_mb = 8
processes = 0
[[desk]]
name = "alpha"
directory = "desks/alpha"
mode = "paper"
timeout_seconds = 0
catch_up_minutes = -5
[desk.model]
compaction_share = 1.5
)")),
              ElementsAre("2:13: 'log_level' must be one of trace, debug, info, warn, error, not 'loud'",
                          "4:12: 'provider' must be one of script, anthropic, openai, not 'gemini'",
                          "5:20: 'compaction_share' must be more than 0", "6:15: 'temperature' must be at least 0",
                          "8:11: 'network' must be one of none, host, not 'bridge'",
                          "9:13: 'memory_mb' must be at least 16", "10:13: 'processes' must be at least 2",
                          "14:8: 'mode' must be one of dry_run, live, not 'paper'",
                          "15:19: 'timeout_seconds' must be more than 0", "16:20: 'catch_up_minutes' must be at least 0",
                          "18:20: 'compaction_share' must be at most 1"));
}

TEST_F(ConfigTest, WhatIsRequiredMustBeThere) {
  EXPECT_THAT(problems(parse(R"([[desk]]
mode = "live"
[[desk.schedule]]
days = ["mon"]
)")),
              ElementsAre("1:1: [[desk]] needs a 'directory'", "1:1: [[desk]] needs a 'name'",
                          "3:1: [[desk.schedule]] needs a 'name'", "3:1: [[desk.schedule]] needs a 'text'",
                          "3:1: [[desk.schedule]] needs a 'time'"));
  EXPECT_THAT(problems(parse("[runner]\nlog_level = \"info\"\n")),
              ElementsAre("0:0: no [[desk]] table: deskd needs at least one desk"));
  EXPECT_THAT(problems(parse("desk = []\n")), ElementsAre("1:8: no desk: deskd needs at least one [[desk]]"));
  EXPECT_THAT(problems(parse("[desk]\nname = \"alpha\"\n")),
              ElementsAre("1:1: 'desk' must be an array of tables, each written [[desk]]"));
}

TEST_F(ConfigTest, ADeskNameIsUniqueAndPlain) {
  EXPECT_THAT(problems(parse(R"([[desk]]
name = "alpha"
directory = "desks/alpha"
[[desk]]
name = "alpha"
directory = "desks/beta"
[[desk]]
name = "not a name"
directory = "desks/beta"
)")),
              ElementsAre("5:8: desk name 'alpha' is used twice; the first is at line 2",
                          "8:8: desk name 'not a name' must be 1 to 64 letters, digits, '_' or '-'"));
}

TEST_F(ConfigTest, AScheduleNameIsUniqueWithinItsDesk) {
  EXPECT_THAT(problems(parse(R"([[desk]]
name = "alpha"
directory = "desks/alpha"
[[desk.schedule]]
name = "open"
time = "09:15"
text = "a"
[[desk.schedule]]
name = "open"
time = "09:20"
text = "b"
[[desk]]
name = "beta"
directory = "desks/beta"
[[desk.schedule]]
name = "open"
time = "09:15"
text = "the same name in another desk is fine"
)")),
              ElementsAre("9:8: schedule name 'open' is used twice in this desk; the first is at line 5"));
}

TEST_F(ConfigTest, MissingFoldersAndFilesAreReported) {
  write("desks/plain-file", "not a folder\n");
  write("bad-holidays.txt", "2026-01-26 Republic Day\nnot a date\n");
  EXPECT_THAT(problems(parse(R"([model]
script = "missing.jsonl"
[[desk]]
name = "alpha"
directory = "desks/missing"
skills = "no-skills"
market_holidays = "no-holidays.txt"
[[desk]]
name = "beta"
directory = "desks/plain-file"
market_holidays = "bad-holidays.txt"
)")),
              ElementsAre("2:10: the script file " + (root_ / "missing.jsonl").native() + " does not exist",
                          "5:13: the desk folder " + (root_ / "desks/missing").native() + " does not exist",
                          "6:10: the skills folder " + (root_ / "no-skills").native() + " does not exist",
                          "7:19: the market holidays file " + (root_ / "no-holidays.txt").native() +
                              " does not exist",
                          "10:13: the desk folder " + (root_ / "desks/plain-file").native() + " is not a folder",
                          HasSubstr("11:19: " + (root_ / "bad-holidays.txt").native() + ":2:")));
}

TEST_F(ConfigTest, AMalformedScriptIsReported) {
  write("broken.jsonl", "{\"text\": \"fine\"}\nnot json\n");
  const auto found = problems(parse(std::string("[model]\nscript = \"broken.jsonl\"\n") + kAlpha));
  ASSERT_EQ(found.size(), 1u);
  EXPECT_THAT(found[0], HasSubstr("2:10: " + (root_ / "broken.jsonl").native() + ":2:"));
}

TEST_F(ConfigTest, AHiddenPathMayNotCoverTheDeskOrAWritablePlace) {
  EXPECT_THAT(problems(parse(R"([sandbox]
hidden_paths = ["desks"]
[[desk]]
name = "alpha"
directory = "desks/alpha"
hidden_paths = ["desks/alpha/secrets", "desks/alpha/notes", "desks/alpha/Memory.md", "desks/alpha/memory/old"]
)")),
              ElementsAre("2:17: the hidden path " + (root_ / "desks").native() + " holds the folder of desk 'alpha', " +
                              (root_ / "desks/alpha").native() + ", so the desk could read nothing of its own",
                          "6:40: the hidden path " + (root_ / "desks/alpha/notes").native() +
                              " is a place desk 'alpha' must be able to write",
                          "6:61: the hidden path " + (root_ / "desks/alpha/Memory.md").native() +
                              " is a place desk 'alpha' must be able to write"));
}

TEST_F(ConfigTest, ADeskInsideTheStateFolderIsRefused) {
  EXPECT_THAT(problems(parse(R"([runner]
state_folder = "desks"
[[desk]]
name = "alpha"
directory = "desks/alpha"
)")),
              ElementsAre("5:13: the folder of desk 'alpha', " + (root_ / "desks/alpha").native() +
                          ", lies inside deskd's state folder " + (root_ / "desks").native() + " (line 2)"));
}

TEST_F(ConfigTest, AnApiKeyFileThatIsAWritablePlaceIsRefused) {
  EXPECT_THAT(problems(parse(R"([model]
api_key_file = "desks/alpha/Memory.md"
[[desk]]
name = "alpha"
directory = "desks/alpha"
)")),
              ElementsAre("2:16: the API key file " + (root_ / "desks/alpha/Memory.md").native() +
                          " is a place desk 'alpha' must be able to write"));
}

TEST_F(ConfigTest, AWritablePlaceThatIsALinkIsRefused) {
  fs::remove_all(root_ / "desks/alpha/notes");
  fs::create_directory_symlink(root_ / "skills", root_ / "desks/alpha/notes");
  const auto found = problems(parse(kAlpha));
  ASSERT_EQ(found.size(), 1u);
  EXPECT_THAT(found[0], HasSubstr("3:13: The writable place " + (root_ / "desks/alpha/notes").native() +
                                  " is a symbolic link"));
}

TEST_F(ConfigTest, ASocketPathTooLongForUnixSocketsIsRefused) {
  const std::string socket = std::string(120, 's') + ".sock";
  const auto found = problems(parse("[runner]\nsocket = \"" + socket + "\"\n" + kAlpha));
  ASSERT_EQ(found.size(), 1u);
  EXPECT_THAT(found[0], HasSubstr("2:10: the socket path " + (root_ / socket).native() + " is "));
  EXPECT_THAT(found[0], HasSubstr("a Unix socket path may be at most 107"));
}

TEST_F(ConfigTest, ManyProblemsAreReportedAtOnceInFileOrder) {
  const auto found = problems(parse(R"([runner]
log_level = "loud"
colour = true
[[desk]]
name = "alpha"
directory = "desks/nowhere"
[[desk.schedule]]
name = "s"
time = "25:00"
text = "t"
)"));
  ASSERT_EQ(found.size(), 4u);
  EXPECT_THAT(found[0], HasSubstr("2:13: 'log_level'"));
  EXPECT_THAT(found[1], HasSubstr("3:1: unknown key 'colour'"));
  EXPECT_THAT(found[2], HasSubstr("6:13: the desk folder"));
  EXPECT_THAT(found[3], HasSubstr("9:8: 'time' must be HH:MM or HH:MM:SS"));
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
  // A desk's sandbox hidden paths add to [sandbox]'s; duplicates are dropped.
  EXPECT_EQ(alpha.sandbox.hidden_paths, (std::vector<fs::path>{"/srv/shared-secret", "/srv/alpha-sandbox-secret"}));
  EXPECT_EQ(alpha.hidden_paths,
            (std::vector<fs::path>{"/srv/alpha-secret", "/srv/shared-secret", "/srv/alpha-sandbox-secret",
                                   "/var/lib/deskd", "/run/deskd/deskd.sock"}));

  const DeskConfig& beta = config.desks[1];
  EXPECT_EQ(beta.model.model, "base");
  EXPECT_EQ(beta.model.prices.at("base").output, 2.0);
  EXPECT_EQ(beta.sandbox.memory_bytes, std::uint64_t{1024} << 20);
  EXPECT_EQ(beta.sandbox.environment_variables, (std::vector<std::string>{"LANG"}));
  EXPECT_EQ(beta.hidden_paths,
            (std::vector<fs::path>{"/srv/shared-secret", "/var/lib/deskd", "/run/deskd/deskd.sock"}));
  // The defaults themselves are left as written.
  EXPECT_EQ(config.model.model, "base");
  EXPECT_EQ(config.sandbox.memory_bytes, std::uint64_t{1024} << 20);
}

TEST_F(ConfigTest, AnApiProviderNeedsAModelAndAKeyOnce) {
  EXPECT_THAT(problems(parse(R"([model]
provider = "anthropic"
[[desk]]
name = "alpha"
directory = "desks/alpha"
[[desk]]
name = "beta"
directory = "desks/beta"
[desk.model]
model = "claude-sonnet-4-5"
api_key_variable = "ANTHROPIC_API_KEY"
)")),
              ElementsAre("1:1: provider 'anthropic' needs 'api_key_file' or 'api_key_variable'",
                          "1:1: provider 'anthropic' needs a 'model'"));
}

TEST_F(ConfigTest, AnApiKeyVariableNeverEntersASandbox) {
  EXPECT_THAT(problems(parse(R"([model]
provider = "openai"
model = "gpt-4.1"
api_key_variable = "OPENAI_API_KEY"
[sandbox]
environment = ["LANG", "OPENAI_API_KEY"]
[[desk]]
name = "alpha"
directory = "desks/alpha"
)")),
              ElementsAre("7:1: desk 'alpha' would pass 'OPENAI_API_KEY', an API key variable, into its sandbox "
                          "('environment'); an API key never enters a sandbox"));
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

TEST_F(ConfigTest, BadScheduleTimesAndDaysAreRefused) {
  EXPECT_THAT(problems(parse(std::string(kAlpha) + R"([[desk.schedule]]
name = "a"
time = "25:00"
days = ["mon", "funday"]
text = "t"
[[desk.schedule]]
name = "b"
time = "9:5"
days = []
text = ""
)")),
              ElementsAre("6:8: 'time' must be HH:MM or HH:MM:SS (24-hour India time), not '25:00'",
                          "7:16: unknown day 'funday' in 'days' (mon, tue, ..., sun or monday, ..., sunday)",
                          "11:8: 'time' must be HH:MM or HH:MM:SS (24-hour India time), not '9:5'",
                          "12:8: 'days' must name at least one day", "13:8: 'text' must not be empty"));
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
}

TEST(CheckCommandTest, ExitsZeroForAGoodConfigAndTwoOtherwise) {
  const std::string example = DESKD_SOURCE_DIR "/examples/deskd.toml";
  const std::vector<std::string_view> good = {"--config", example};
  EXPECT_EQ(run_check_command(good), 0);
  const std::vector<std::string_view> missing = {"--config", "/var/tmp/deskd-no-such-config.toml"};
  EXPECT_EQ(run_check_command(missing), 2);
  const std::vector<std::string_view> no_file = {"--config"};
  EXPECT_EQ(run_check_command(no_file), 2);
  const std::vector<std::string_view> stray = {"--config", example, "extra"};
  EXPECT_EQ(run_check_command(stray), 2);
  EXPECT_EQ(run_check_command({}), 2);
}

}  // namespace
}  // namespace deskd::app
