// A desk's terminal under `deskd serve` when its sandbox cannot start, and when deskd holds
// more descriptors than a desk may (issue 27): a terminal that cannot start ends the turn
// as TURN_FAILED naming the step, in the event, the journal and deskd's log; a deskd past
// a thousand descriptors still starts its desks' terminals.

#include <sys/resource.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "e2e/daemon_fixture.h"
#include "e2e/serve_test_support.h"
#include "e2e/turn_tools.h"

namespace deskd::e2e {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

// The operator removed a folder the desk is shown read-only after the desk started: the
// desk's next terminal cannot be set up, and the turn says so instead of finishing.
TEST_F(ServeE2eTest, ATerminalThatCannotStartFailsTheTurnNamingTheStep) {
  ServeDaemon daemon({DeskSetup{.name = "one",
                                .script = scripted_turn({bash_call("echo never")}),
                                .tables = "[desk.sandbox]\nread_only_paths = [\"shared\"]\n"}});
  const std::string shared = daemon.folder() + "/shared";
  fs::create_directories(shared);
  ASSERT_NO_FATAL_FAILURE(start(daemon));
  fs::remove_all(shared);

  auto events = daemon.follow("one");
  ASSERT_TRUE(events);
  const DeskctlResult asked = daemon.deskctl({"ask", "one", "run it"});
  EXPECT_EQ(asked.exit_code, 1) << describe(asked);
  EXPECT_THAT(asked.output + asked.error_output, HasSubstr("turn failed"));
  std::vector<json::object> seen;
  auto failed = events->wait_for_event(is_event("TURN_FAILED"), 30s, &seen);
  ASSERT_TRUE(failed) << daemon.process().error_output();
  const std::string error = event_data(*failed, "error");
  EXPECT_THAT(error, HasSubstr("terminal could not start"));
  EXPECT_THAT(error, HasSubstr("the read-only path " + shared)) << error;  // the step
  EXPECT_EQ(find_event(seen, is_event("TURN_FINISHED")), seen.size()) << "the turn also finished";
  // The bash call itself was answered with why, for the model's session.
  const std::size_t tool = find_event(seen, is_event("TOOL_FINISHED"));
  ASSERT_LT(tool, seen.size());
  EXPECT_THAT(event_data(seen[tool], "text"), HasSubstr("could not start"));

  EXPECT_THAT(file_text(daemon.journal_path("one")), HasSubstr("TURN_FAILED"));
  const std::string log = daemon.process().error_output();
  EXPECT_THAT(log, HasSubstr("TURN_FAILED")) << log;
  EXPECT_THAT(log, HasSubstr("the read-only path " + shared)) << log;

  // The desk goes on: the next message is answered (the script's closing text).
  const DeskctlResult again = daemon.deskctl({"ask", "one", "again"});
  EXPECT_EQ(again.exit_code, 0) << describe(again);
  EXPECT_THAT(again.output, HasSubstr("turn finished")) << describe(again);
}

// 1,100 control clients hold deskd's descriptor numbers past the desk's open-files limit
// (1,024): the desk's terminal starts all the same.
TEST_F(ServeE2eTest, ADeskRunsBashWhileDeskdHoldsMoreDescriptorsThanTheDesksLimit) {
  constexpr int kClients = 1100;
  rlimit limit{};
  ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &limit), 0);
  if (limit.rlim_max != RLIM_INFINITY && limit.rlim_max < kClients + 256) {
    GTEST_SKIP() << "the hard open-files limit (" << limit.rlim_max << ") cannot hold " << kClients << " clients";
  }
  limit.rlim_cur = std::max<rlim_t>(limit.rlim_cur, kClients + 256);
  ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &limit), 0);
  ServeDaemon daemon({DeskSetup{.name = "one", .script = scripted_turn({bash_call("echo ran")})}},
                     "max_clients = 2000\n");
  ASSERT_NO_FATAL_FAILURE(start(daemon));
  std::vector<ControlConnection> clients;
  clients.reserve(kClients);
  for (int index = 0; index < kClients; ++index) {
    clients.push_back(daemon.connect());
    ASSERT_TRUE(clients.back().connected()) << "client " << index;
    // Following: not idle, so deskd keeps them past its request deadline.
    ASSERT_TRUE(clients.back().send({{"id", index}, {"op", "follow"}, {"desk", "one"}}));
  }
  // Accepted one after another: once the last is served, deskd holds every one of them.
  ASSERT_TRUE(clients.back().call({{"id", "last"}, {"op", "desks"}}));

  const std::vector<ToolOutcome> outcomes = run_turn(daemon, "one", "run it");
  ASSERT_EQ(outcomes.size(), 1u);
  EXPECT_TRUE(outcomes[0].allowed()) << describe(outcomes[0]);
  EXPECT_THAT(outcomes[0].text, HasSubstr("ran")) << describe(outcomes[0]);
}

}  // namespace
}  // namespace deskd::e2e
