// Reloading the config of a running deskd (issue 13), end to end: `deskctl reload` and
// SIGHUP read the file again; a desk added is started, one removed is stopped, one changed
// is restarted, and the others keep running, a turn in progress included. A config with a
// problem, or a changed [runner], is refused with every problem named, and nothing changes.

#include <signal.h>
#include <sys/stat.h>

#include <boost/json.hpp>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "e2e/daemon_fixture.h"
#include "e2e/turn_tools.h"

namespace deskd::e2e {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::Not;
using namespace std::chrono_literals;

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// A desk folder and script for `name`, and its [[desk]] table at the end of the config.
void add_desk(const ServeDaemon& daemon, const std::string& name, const std::string& script) {
  const std::string directory = daemon.desk_directory(name);
  fs::create_directories(directory);
  ::chmod(directory.c_str(), 0755);
  std::ofstream(directory + "/README.md") << "A desk added by a reload.\n";
  std::ofstream(daemon.script_path(name)) << script;
  std::ofstream(daemon.config_path(), std::ios::app)
      << "\n[[desk]]\nname = \"" << name << "\"\ndirectory = \"desks/" << name << "\"\n[desk.model]\nscript = \""
      << name << ".jsonl\"\n";
}

std::string desk_names(const ServeDaemon& daemon) {
  std::string names;
  for (const auto& [name, state] : daemon.desk_states()) names += name + "=" + state + " ";
  return names;
}

TEST(ServeReloadE2eTest, ADeskAddedDuringAnotherDesksTurnStartsAndTheTurnGoesOn) {
  ServeDaemon daemon({DeskSetup{.name = "a", .script = R"({"text": "a here"})" "\n"},
                      DeskSetup{.name = "b", .script = scripted_turn({bash_call("sleep 2; echo b-done")})}});
  std::string why;
  ASSERT_TRUE(daemon.start({}, &why)) << why;
  auto asked = daemon.deskctl_in_background({"ask", "b", "take your time"});
  // The turn is under way before the reload.
  for (int tries = 0; tries < 100 && desk_names(daemon).find("b=running") == std::string::npos; ++tries) {
    std::this_thread::sleep_for(20ms);
  }
  ASSERT_THAT(desk_names(daemon), HasSubstr("b=running"));
  add_desk(daemon, "c", R"({"text": "c is new"})" "\n");

  const DeskctlResult reloaded = daemon.deskctl({"reload"});
  EXPECT_EQ(reloaded.exit_code, 0) << reloaded.output << reloaded.error_output;
  EXPECT_THAT(reloaded.output, HasSubstr("started    c"));
  EXPECT_THAT(reloaded.output, HasSubstr("kept       a, b"));
  EXPECT_LT(reloaded.elapsed, 1500ms) << "the reload waited for b's turn";
  EXPECT_THAT(desk_names(daemon), HasSubstr("b=running")) << "b's turn was cut short";

  const DeskctlResult turn = asked->finish();
  EXPECT_EQ(turn.exit_code, 0) << turn.output << turn.error_output;
  EXPECT_THAT(turn.output, HasSubstr("b-done"));
  const DeskctlResult c = daemon.deskctl({"ask", "c", "hello"});
  EXPECT_EQ(c.exit_code, 0) << c.error_output;
  EXPECT_THAT(c.output, HasSubstr("c is new"));
  EXPECT_EQ(daemon.stop(), 0);
}

TEST(ServeReloadE2eTest, ARemovedDeskStopsAChangedOneRestartsAndSighupReloadsToo) {
  ServeDaemon daemon({DeskSetup{.name = "a", .script = ""}, DeskSetup{.name = "b", .script = ""},
                      DeskSetup{.name = "keep", .script = ""}});
  std::string why;
  ASSERT_TRUE(daemon.start({}, &why)) << why;
  std::string config = read_text(daemon.config_path());
  // a goes; b gets a longer command timeout; keep only moves down a line.
  const auto a_table = config.find("[[desk]]\nname = \"a\"");
  const auto b_table = config.find("[[desk]]\nname = \"b\"");
  ASSERT_NE(a_table, std::string::npos);
  ASSERT_NE(b_table, std::string::npos);
  config.erase(a_table, b_table - a_table);
  const std::string b_directory = "directory = \"desks/b\"\n";
  config.insert(config.find(b_directory) + b_directory.size(), "timeout_seconds = 30\n");
  config.insert(config.find("[[desk]]\nname = \"keep\""), "\n");
  std::ofstream(daemon.config_path(), std::ios::trunc) << config;

  daemon.process().signal(SIGHUP);
  std::string names;
  for (int tries = 0; tries < 250; ++tries) {
    names = desk_names(daemon);
    if (names.find("a=") == std::string::npos && names.find("b=idle") != std::string::npos) break;
    std::this_thread::sleep_for(20ms);
  }
  EXPECT_THAT(names, Not(HasSubstr("a=")));
  EXPECT_THAT(names, HasSubstr("b=idle"));
  EXPECT_THAT(names, HasSubstr("keep=idle"));
  const std::string journal_b = read_text(daemon.journal_path("b"));
  const std::string journal_keep = read_text(daemon.journal_path("keep"));
  EXPECT_THAT(journal_b, HasSubstr("DESK_STOPPED")) << "b was not restarted";
  EXPECT_THAT(journal_keep, Not(HasSubstr("DESK_STOPPED"))) << "keep was restarted though it did not change";
  EXPECT_THAT(read_text(daemon.journal_path("a")), HasSubstr("DESK_STOPPED"));
  EXPECT_EQ(daemon.deskctl({"status", "a"}).exit_code, 1);
  EXPECT_EQ(daemon.stop(), 0);
}

TEST(ServeReloadE2eTest, APausedDeskRestartedByAReloadStaysPaused) {
  ServeDaemon daemon({DeskSetup{.name = "a", .script = R"({"text": "a works again"})" "\n"}});
  std::string why;
  ASSERT_TRUE(daemon.start({}, &why)) << why;
  const DeskctlResult paused = daemon.deskctl({"ask", "a", "/pause"});
  ASSERT_EQ(paused.exit_code, 0) << paused.output << paused.error_output;
  // A changed desk setting restarts the desk.
  std::string config = read_text(daemon.config_path());
  const std::string a_directory = "directory = \"desks/a\"\n";
  ASSERT_NE(config.find(a_directory), std::string::npos);
  config.insert(config.find(a_directory) + a_directory.size(), "timeout_seconds = 30\n");
  std::ofstream(daemon.config_path(), std::ios::trunc) << config;
  const DeskctlResult reloaded = daemon.deskctl({"reload"});
  ASSERT_EQ(reloaded.exit_code, 0) << reloaded.output << reloaded.error_output;
  EXPECT_THAT(reloaded.output, HasSubstr("restarted  a"));
  std::string names;
  for (int tries = 0; tries < 250 && names.find("a=idle") == std::string::npos; ++tries) {
    names = desk_names(daemon);
    std::this_thread::sleep_for(20ms);
  }
  ASSERT_THAT(names, HasSubstr("a=idle"));

  EXPECT_THAT(daemon.deskctl({"ask", "a", "/status"}).output, HasSubstr("Paused: yes"));
  EXPECT_THAT(daemon.deskctl({"ask", "a", "still paused?"}).output, HasSubstr("paused, so no model was asked"));
  ASSERT_EQ(daemon.deskctl({"ask", "a", "/resume"}).exit_code, 0);
  EXPECT_THAT(daemon.deskctl({"ask", "a", "go on"}).output, HasSubstr("a works again"));
  EXPECT_EQ(daemon.stop(), 0);
}

TEST(ServeReloadE2eTest, AConfigWithAProblemIsRefusedWithItsPlaceAndTheDesksKeepRunning) {
  ServeDaemon daemon({DeskSetup{.name = "a", .script = R"({"text": "still here"})" "\n"}});
  std::string why;
  ASSERT_TRUE(daemon.start({}, &why)) << why;
  const std::string good = read_text(daemon.config_path());
  std::ofstream(daemon.config_path(), std::ios::app) << "\n[[desk]]\nname = \"z\"\ndirectory = \"no-such-folder\"\n";
  const DeskctlResult refused = daemon.deskctl({"reload"});
  EXPECT_EQ(refused.exit_code, 1);
  EXPECT_THAT(refused.error_output, HasSubstr("problem(s), so it was not loaded"));
  EXPECT_THAT(refused.error_output, HasSubstr(daemon.config_path() + ":"));
  EXPECT_THAT(refused.error_output, HasSubstr("the desk folder"));

  // [runner] is taken at start only.
  std::string runner_changed = good;
  runner_changed.replace(runner_changed.find("shutdown_grace_seconds = 1"), 26, "shutdown_grace_seconds = 2");
  std::ofstream(daemon.config_path(), std::ios::trunc) << runner_changed;
  const DeskctlResult runner = daemon.deskctl({"reload"});
  EXPECT_EQ(runner.exit_code, 1);
  EXPECT_THAT(runner.error_output, HasSubstr("[runner] changed (shutdown_grace_seconds)"));

  const DeskctlResult asked = daemon.deskctl({"ask", "a", "are you there?"});
  EXPECT_EQ(asked.exit_code, 0) << asked.error_output;
  EXPECT_THAT(asked.output, HasSubstr("still here"));
  EXPECT_EQ(daemon.stop(), 0);
}

}  // namespace
}  // namespace deskd::e2e
