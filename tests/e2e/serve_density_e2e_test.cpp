// Many desks under one `deskd serve` (issue 27): 300 desks on the script model each run one
// bash command in a sandbox of their own, all at once, and every turn finishes — none ends
// as TURN_FAILED (before issue 27 a desk past about the 165th could not start its terminal:
// "Too many open files"). bench/desk_density measures the same at 100, 300 and 1,000 desks.
//
// It runs longer than the other e2e tests (82 s on the 2-core development machine at load
// average 6, root deskd, 3 December 2026: 44 s until all 300 desks were idle, 19 s until every
// turn ended, the rest deskd's stop and the folders' removal), so it is a test program of its
// own with its own label (e2e_density: `ctest -L density`) and timeout. Most of it is deskd's
// start, which today starts desks one after another, each with a `true` sandbox first; and
// 300 first bash commands are 300 cold sandbox starts (a uid and cgroups each under root).

#include <boost/json.hpp>

#include <chrono>
#include <cstdio>
#include <iostream>
#include <map>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "e2e/daemon_fixture.h"
#include "e2e/serve_test_support.h"
#include "e2e/turn_tools.h"

namespace deskd::e2e {
namespace {

using ::testing::HasSubstr;

constexpr int kDesks = 300;
// Generous: these bound a hang, not the speed (see the file's comment for what it takes).
constexpr auto kStartTimeout = std::chrono::seconds(300);
constexpr auto kTurnsTimeout = std::chrono::seconds(300);

std::string desk_name(int index) {
  char name[16];
  std::snprintf(name, sizeof name, "d%03d", index);
  return name;
}

// What one desk's turn did, from the events of a follow of every desk.
struct DeskTurn {
  std::string trigger;
  std::string ended;  // TURN_FINISHED, TURN_FAILED or TURN_STOPPED; empty while it runs
  std::string error;  // TURN_FAILED's
  int bash_calls = 0;
  bool bash_exited_zero = false;
  std::string bash_text;
};

TEST_F(ServeE2eTest, ThreeHundredDesksEachRunABashCommand) {
  std::vector<DeskSetup> desks;
  for (int index = 0; index < kDesks; ++index) {
    const std::string name = desk_name(index);
    desks.push_back(DeskSetup{.name = name, .script = scripted_turn({bash_call("echo ran-in-" + name)})});
  }
  ServeDaemon daemon(desks, "log_level = \"warn\"\n");
  const auto launched = Clock::now();
  std::string why;
  ASSERT_TRUE(daemon.start({}, &why, kStartTimeout)) << why;
  const auto ready_after = since(launched);

  auto events = daemon.follow("");
  ASSERT_TRUE(events) << "could not follow every desk's events";
  std::map<std::string, DeskTurn> turns;
  for (int index = 0; index < kDesks; ++index) turns[desk_name(index)];

  // Every message on one connection, written before any reply is read.
  ControlConnection sender = daemon.connect();
  ASSERT_TRUE(sender.connected());
  const auto sent = Clock::now();
  std::string requests;
  for (int index = 0; index < kDesks; ++index) {
    const std::string name = desk_name(index);
    requests += json::serialize(json::object{{"id", name}, {"op", "send"}, {"desk", name}, {"text", "run your command"}}) + "\n";
  }
  ASSERT_TRUE(sender.send_raw(requests));
  for (int index = 0; index < kDesks; ++index) {
    auto reply = sender.read_object(60s);
    ASSERT_TRUE(reply) << "deskd acknowledged only " << index << " of " << kDesks << " messages";
    ASSERT_EQ(field(*reply, "ok"), "true") << json::serialize(*reply);
    const std::string name = field(*reply, "id");
    ASSERT_TRUE(turns.contains(name)) << json::serialize(*reply);
    turns[name].trigger = field(*reply, "trigger");
  }

  int ended = 0;
  const auto deadline = Clock::now() + kTurnsTimeout;
  while (ended < kDesks && Clock::now() < deadline) {
    auto event = events->wait_for_event(
        [](const json::object& seen) {
          const std::string kind = event_kind(seen);
          return kind == "TOOL_FINISHED" || kind == "TURN_FINISHED" || kind == "TURN_FAILED" || kind == "TURN_STOPPED";
        },
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()));
    if (!event) break;
    const auto found = turns.find(field(*event, "desk"));
    if (found == turns.end() || !found->second.ended.empty()) continue;
    DeskTurn& turn = found->second;
    const std::string kind = event_kind(*event);
    if (kind == "TOOL_FINISHED") {
      if (event_data(*event, "tool") != "bash") continue;
      ++turn.bash_calls;
      turn.bash_text = event_data(*event, "text");
      const json::object& data = event->at("data").as_object();
      const json::value* status = data.if_contains("exit_status");
      const json::value* failed = data.if_contains("is_error");
      turn.bash_exited_zero = status != nullptr && status->is_int64() && status->as_int64() == 0 &&
                              failed != nullptr && failed->is_bool() && !failed->as_bool();
    } else {
      turn.ended = kind;
      turn.error = event_data(*event, "error");
      ++ended;
    }
  }
  const auto turns_took = since(sent);
  std::cout << "[ density  ] " << kDesks << " desks ready after " << ready_after.count() << " ms; every desk's bash turn ended "
            << turns_took.count() << " ms after the first message\n";

  int finished = 0;
  for (const auto& [name, turn] : turns) {
    SCOPED_TRACE(name);
    EXPECT_EQ(turn.ended, "TURN_FINISHED") << turn.error;
    EXPECT_EQ(turn.bash_calls, 1);
    EXPECT_TRUE(turn.bash_exited_zero) << turn.bash_text;
    EXPECT_THAT(turn.bash_text, HasSubstr("ran-in-" + name));
    if (turn.ended == "TURN_FINISHED" && turn.bash_exited_zero) ++finished;
  }
  EXPECT_EQ(finished, kDesks) << "of " << kDesks << " desks, " << finished << " ran their command and finished";
  // The journals say the same: every desk's turn finished, none failed.
  for (const auto& [name, turn] : turns) {
    const std::string journal = file_text(daemon.journal_path(name));
    EXPECT_THAT(journal, HasSubstr("TURN_FINISHED")) << name;
    EXPECT_THAT(journal, ::testing::Not(HasSubstr("TURN_FAILED"))) << name;
  }
  EXPECT_EQ(daemon.stop(60s), 0) << daemon.process().error_output();
}

}  // namespace
}  // namespace deskd::e2e
