// `deskd serve` whose state folder fills up mid-turn, on a real (small, loop-mounted) ext4
// file system: the refused finish lines are visible at once (JOURNAL_WRITE_FAILED, and a
// log line), and after kill -9 and a restart with room again the trigger is reported as
// re-delivered with why (TRIGGER_REDELIVERED), never run again in silence.

#include <signal.h>

#include <boost/json.hpp>

#include <filesystem>
#include <fstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "e2e/daemon_fixture.h"
#include "e2e/serve_test_support.h"
#include "e2e/small_file_system.h"

namespace deskd::e2e {
namespace {

using ::testing::HasSubstr;

TEST_F(ServeE2eTest, AFinishLineLostToAFullDiskIsToldAndTheTriggerReportedAsRedelivered) {
  // The turn's reply is longer than what is left of the journal's last block, so that the
  // disk refuses it and everything after it.
  const std::string reply(20000, 'r');
  ServeDaemon daemon({{"one", R"({"steps": [{"tool_calls": [{"name": "bash", "input": {"command": "sleep 2; echo slept"}}]}, {"text": ")" +
                                  reply + "\"}]}\n"}});
  SmallFileSystem disk(daemon.folder() + "/state", 8);
  if (!disk.mounted()) GTEST_SKIP() << "no small file system to fill: " << disk.why_not();
  ASSERT_NO_FATAL_FAILURE(start(daemon));
  std::string trigger;
  {
    auto events = daemon.follow("one");
    ASSERT_TRUE(events);
    const auto send = daemon.deskctl({"send", "one", "place the order"});
    ASSERT_EQ(send.exit_code, 0) << describe(send);
    trigger = trimmed(send.output);
    ASSERT_TRUE(events->wait_for_event(is_event("TOOL_CALLED")));
    ASSERT_TRUE(disk.fill()) << "the file system never said it was full";
    std::vector<json::object> seen;
    // The bus tells the finish, then the journal refuses its line.
    ASSERT_TRUE(events->wait_for_event(
        [&](const json::object& event) {
          return event_kind(event) == "JOURNAL_WRITE_FAILED" && event_data(event, "kind") == "TRIGGER_FINISHED";
        },
        30s, &seen));
    std::vector<std::string> refused;
    for (const auto& event : seen) {
      if (event_kind(event) == "JOURNAL_WRITE_FAILED" && event_data(event, "trigger") == trigger) {
        refused.push_back(event_data(event, "kind"));
        EXPECT_THAT(event_data(event, "error"), HasSubstr("held"));
      }
    }
    EXPECT_THAT(refused, ::testing::ElementsAre("TURN_FINISHED", "TRIGGER_FINISHED"));
    EXPECT_THAT(daemon.process().error_output(), HasSubstr("one: JOURNAL_WRITE_FAILED " + trigger));
    // deskd dies before the disk has room again: the held lines go with it.
    daemon.process().signal(SIGKILL);
    EXPECT_EQ(daemon.process().wait(), 128 + SIGKILL);
  }
  disk.make_room();
  std::ofstream(daemon.script_path("one")) << R"({"text": "ran again, and said so"})" "\n";
  ASSERT_NO_FATAL_FAILURE(start(daemon));
  auto events = daemon.follow("one", /*replay=*/true);
  ASSERT_TRUE(events);
  const auto redelivered = events->wait_for_event(is_event("TRIGGER_REDELIVERED", trigger));
  ASSERT_TRUE(redelivered);
  EXPECT_THAT(event_data(*redelivered, "reason"), HasSubstr("could not take the turn's end"));
  const auto finished = events->wait_for_event(is_event("TURN_FINISHED", trigger));
  ASSERT_TRUE(finished);
  EXPECT_EQ(event_data(*finished, "reply"), "ran again, and said so");
  EXPECT_THAT(daemon.process().error_output(), HasSubstr("one: TRIGGER_REDELIVERED " + trigger));
  // The model was told its earlier turn may have done part of the work.
  EXPECT_THAT(file_text(daemon.session_path("one")), HasSubstr("cut short"));
  EXPECT_EQ(daemon.stop(), 0);  // before the file system goes
}

}  // namespace
}  // namespace deskd::e2e
