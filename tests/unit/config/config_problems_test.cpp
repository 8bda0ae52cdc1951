// The daemon's config when it is wrong: every problem reported at once, each at its
// file:line:column, in file order.

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
                          "8:11: 'network' must be one of none, host, allowlist, not 'bridge'",
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
  // Each desk in a folder of its own: two desks may not share one.
  fs::create_directories(root_ / "desks/gamma");
  EXPECT_THAT(problems(parse(R"([[desk]]
name = "alpha"
directory = "desks/alpha"
[[desk]]
name = "alpha"
directory = "desks/beta"
[[desk]]
name = "not a name"
directory = "desks/gamma"
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

}  // namespace
}  // namespace deskd::app
