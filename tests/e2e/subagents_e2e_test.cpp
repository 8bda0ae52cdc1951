// Subagents through `deskd serve`: the script model's reply starts two subagents at once,
// each answering from the script in a sandbox of its own; their answers come back as the
// tool results; /agents, /journal and /tools answer beside the running turn; /stop stops
// the subagents with the turn; a subagent's bash sees the desk's world and no more.

#include <boost/json.hpp>

#include <unistd.h>

#include <filesystem>
#include <regex>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "e2e/daemon_fixture.h"
#include "e2e/serve_test_support.h"

namespace deskd::e2e {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

std::string bash_call(const std::string& command) {
  return json::serialize(json::object{{"name", "bash"}, {"input", json::object{{"command", command}}}});
}

std::string subagent_call(const std::string& task) {
  return json::serialize(json::object{{"name", "start_subagent"}, {"input", json::object{{"task", task}}}});
}

// A subagent's script line: one bash command, then its answer.
std::string subagent_line(const std::string& task, const std::string& command, const std::string& answer) {
  return R"({"subagent": ")" + task + R"(", "steps": [{"tool_calls": [)" + bash_call(command) + R"(]}, {"text": ")" +
         answer +
         R"("}]})"
         "\n";
}

// Waits (up to 10 s) for the other subagent's mark: only subagents that run at once meet.
std::string meet(const std::string& mine, const std::string& other) {
  return "touch scratch/" + mine + "-here; for i in $(seq 100); do [ -e scratch/" + other +
         "-here ] && break; sleep 0.1; done; [ -e scratch/" + other + "-here ] && echo " + mine + "-met-" + other;
}

std::vector<json::object> subagent_events(const std::vector<json::object>& journal, const std::string& kind) {
  std::vector<json::object> found;
  for (const auto& event : journal) {
    if (event_kind(event) == kind && !event_data(event, "subagent").empty()) found.push_back(event);
  }
  return found;
}

TEST_F(ServeE2eTest, TwoSubagentsRunAtOnceAndTheirAnswersComeBackAsToolResults) {
  const std::string script = R"({"steps": [{"text": "delegating", "tool_calls": [)" + subagent_call("alpha") + ", " +
                             subagent_call("beta") + ", " + subagent_call("gamma") +
                             R"(]}, {"text": "both answered"}]})"
                             "\n" +
                             subagent_line("alpha", meet("alpha", "beta"), "alpha answer") +
                             subagent_line("beta", meet("beta", "alpha"), "beta answer") +
                             subagent_line("gamma", "echo gamma-ran", "gamma answer");
  ServeDaemon daemon({{"one", script, "maximum_subagents = 2\n"}});
  ASSERT_NO_FATAL_FAILURE(start(daemon));
  const auto ask = daemon.deskctl({"ask", "one", "split the work"}, 60s);
  EXPECT_EQ(ask.exit_code, 0) << describe(ask);
  EXPECT_THAT(ask.output, HasSubstr("turn finished: both answered"));

  const auto journal = json_lines(daemon.journal_path("one"));
  std::vector<std::string> results;
  for (const auto& event : journal) {
    if (event_kind(event) == "TOOL_FINISHED" && event_data(event, "tool") == "start_subagent" &&
        event_data(event, "subagent").empty()) {
      results.push_back(event_data(event, "text"));
    }
  }
  ASSERT_EQ(results.size(), 3u) << file_text(daemon.journal_path("one"));
  // In the order the model called them: each answer is its call's result.
  EXPECT_THAT(results[0], HasSubstr("alpha answer"));
  EXPECT_THAT(results[1], HasSubstr("beta answer"));
  // The desk allows two at once: the third is refused, and says why.
  EXPECT_THAT(results[2], HasSubstr("2 subagents already run"));

  // Both ran at once (each saw the other's mark), each in its own bash, journaled under the
  // desk with its id.
  std::string subagent_output;
  for (const auto& event : subagent_events(journal, "TOOL_FINISHED"))
    subagent_output += event_data(event, "text") + "\n";
  EXPECT_THAT(subagent_output, HasSubstr("alpha-met-beta"));
  EXPECT_THAT(subagent_output, HasSubstr("beta-met-alpha"));
  const auto started = subagent_events(journal, "SUBAGENT_STARTED");
  ASSERT_EQ(started.size(), 2u);
  EXPECT_NE(event_data(started[0], "subagent"), event_data(started[1], "subagent"));
  EXPECT_EQ(subagent_events(journal, "SUBAGENT_FINISHED").size(), 2u);

  // Their model calls count in the desk's usage.
  const auto usage = daemon.deskctl({"ask", "one", "/agents"}, 20s);
  EXPECT_THAT(usage.output, HasSubstr("finished"));
  EXPECT_THAT(usage.output, HasSubstr("alpha"));
}

TEST_F(ServeE2eTest, AgentsJournalAndToolsAnswerBesideTheTurnAndStopStopsTheSubagents) {
  const std::string script = R"({"steps": [{"text": "delegating", "tool_calls": [)" + subagent_call("wait one") + ", " +
                             subagent_call("wait two") +
                             R"(]}, {"text": "never reached"}]})"
                             "\n" +
                             subagent_line("wait one", "echo one-started; sleep 30", "one done") +
                             subagent_line("wait two", "echo two-started; sleep 30", "two done");
  ServeDaemon daemon({{"one", script}});
  ASSERT_NO_FATAL_FAILURE(start(daemon));
  auto events = daemon.follow("one");
  ASSERT_TRUE(events);
  auto ask = daemon.deskctl_in_background({"ask", "one", "wait for them"});
  const auto subagent_bash = [](const json::object& event) {
    return event_kind(event) == "TOOL_CALLED" && event_data(event, "tool") == "bash" &&
           !event_data(event, "subagent").empty();
  };
  ASSERT_TRUE(events->wait_for_event(subagent_bash));
  ASSERT_TRUE(events->wait_for_event(subagent_bash));

  const auto agents = daemon.deskctl({"ask", "one", "/agents"}, 20s);
  EXPECT_EQ(agents.exit_code, 0) << describe(agents);
  EXPECT_LT(agents.elapsed, 5s);
  EXPECT_THAT(agents.output, HasSubstr("/agents:"));
  EXPECT_THAT(agents.output, HasSubstr("wait one"));
  EXPECT_THAT(agents.output, HasSubstr("wait two"));
  EXPECT_THAT(agents.output, HasSubstr("running"));

  const auto journal = daemon.deskctl({"ask", "one", "/journal 50 SUBAGENT_STARTED"}, 20s);
  EXPECT_EQ(journal.exit_code, 0) << describe(journal);
  EXPECT_LT(journal.elapsed, 5s);
  EXPECT_THAT(journal.output, HasSubstr("subagent sa-"));
  EXPECT_THAT(journal.output, HasSubstr("started: wait one"));
  EXPECT_THAT(journal.output, Not(HasSubstr("TURN_STARTED")));
  const auto recent = daemon.deskctl({"ask", "one", "/journal 5"}, 20s);
  EXPECT_THAT(recent.output, HasSubstr("The last 5 journal entries"));
  const auto bad = daemon.deskctl({"ask", "one", "/journal many"}, 20s);
  EXPECT_THAT(bad.output, HasSubstr("Use /journal [N] [KIND]"));

  const auto tools = daemon.deskctl({"ask", "one", "/tools"}, 20s);
  EXPECT_EQ(tools.exit_code, 0) << describe(tools);
  EXPECT_LT(tools.elapsed, 5s);
  EXPECT_THAT(tools.output, HasSubstr("bash: runs commands in the desk's sandbox"));
  EXPECT_THAT(tools.output, HasSubstr("write_file: writes only"));
  EXPECT_THAT(tools.output, HasSubstr("start_subagent: starts subagents"));
  EXPECT_THAT(tools.output, HasSubstr(daemon.desk_directory("one") + "/.env"));

  // The command menu and /help come from the one table, with the new commands in it.
  const auto commands = daemon.deskctl({"commands", "one"}, 20s);
  const auto help = daemon.deskctl({"ask", "one", "/help"}, 20s);
  for (const char* command : {"/agents", "/journal", "/tools"}) {
    EXPECT_THAT(commands.output, HasSubstr(command)) << commands.output;
    EXPECT_THAT(help.output, HasSubstr(command)) << help.output;
  }

  const auto stop_sent = Clock::now();
  const auto stop = daemon.deskctl({"send", "one", "/stop"});
  EXPECT_EQ(stop.exit_code, 0) << describe(stop);
  std::vector<json::object> seen;
  ASSERT_TRUE(events->wait_for_event(is_event("TURN_STOPPED"), 20s, &seen));
  EXPECT_LT(since(stop_sent), 5s);
  std::size_t stopped = 0;
  for (const auto& event : seen) {
    if (event_kind(event) == "SUBAGENT_FINISHED" && event_data(event, "state") == "stopped") ++stopped;
  }
  EXPECT_EQ(stopped, 2u);
  const auto result = ask->finish(20s);
  EXPECT_EQ(result.exit_code, 1) << describe(result);
  const auto after = daemon.deskctl({"ask", "one", "/agents"}, 20s);
  EXPECT_THAT(after.output, HasSubstr("stopped"));
  EXPECT_THAT(after.output, Not(HasSubstr("running")));
}

TEST_F(ServeE2eTest, ASubagentsBashIsSandboxedLikeTheDesks) {
  // Run by the desk's own bash and by a subagent's: both must see the same world.
  const std::string probe =
      "cat .env && echo SECRET-READ || echo secret-refused; "
      "if [ -e /home ]; then echo HOME-PRESENT; else echo home-absent; fi; "
      "touch plan.md 2>/dev/null && echo PLAN-WRITTEN || echo plan-refused; "
      "touch scratch/mine && echo scratch-written; id -u";
  const std::string script = R"({"steps": [{"tool_calls": [)" + bash_call(probe) + ", " + subagent_call("probe") +
                             R"(]}, {"text": "probed"}]})"
                             "\n" +
                             subagent_line("probe", probe, "probed too");
  ServeDaemon daemon({{"one", script}});
  ASSERT_NO_FATAL_FAILURE(start(daemon));
  const auto ask = daemon.deskctl({"ask", "one", "probe"}, 60s);
  EXPECT_EQ(ask.exit_code, 0) << describe(ask);

  std::string desk_output, subagent_output;
  for (const auto& event : json_lines(daemon.journal_path("one"))) {
    if (event_kind(event) != "TOOL_FINISHED" || event_data(event, "tool") != "bash") continue;
    (event_data(event, "subagent").empty() ? desk_output : subagent_output) += event_data(event, "text");
  }
  ASSERT_FALSE(subagent_output.empty()) << file_text(daemon.journal_path("one"));
  for (const std::string& output : {desk_output, subagent_output}) {
    EXPECT_THAT(output, HasSubstr("secret-refused"));
    EXPECT_THAT(output, Not(HasSubstr("deskd-serve-secret")));
    EXPECT_THAT(output, HasSubstr("home-absent"));
    EXPECT_THAT(output, HasSubstr("plan-refused"));
    EXPECT_THAT(output, HasSubstr("scratch-written"));
  }
  EXPECT_EQ(desk_output, subagent_output);  // the same identity, the same answers
}

// The desk's limits are for the desk as a whole, its subagents' sandboxes included: two
// subagents that each hold 115 MiB at once do not fit in memory_mb = 200 (with a limit per
// sandbox, as before, each had 200 MiB of its own and both held theirs).
std::string hold_and_meet(const std::string& mine, const std::string& other) {
  return "python3 -c \"\nimport os, time\nb = bytearray(range(256)) * (450 << 10)\nopen('scratch/" + mine +
         "-held', 'w').close()\nfor i in range(150):\n    if os.path.exists('scratch/" + other +
         "-held'): break\n    time.sleep(0.1)\nelse:\n    raise SystemExit(0)\ntime.sleep(2)\nprint('" + mine +
         "-survived-' + str(len(b) >> 20))\n\"";
}

TEST_F(ServeE2eTest, TwoSubagentsCannotEachHoldTheDesksMemory) {
  if (::geteuid() != 0) GTEST_SKIP() << "an unprivileged deskd on this host may have no cgroup (see deskd doctor)";
  const std::string script = R"({"steps": [{"tool_calls": [)" + subagent_call("alpha") + ", " +
                             subagent_call("beta") + R"(]}, {"text": "both tried"}]})"
                             "\n" +
                             subagent_line("alpha", hold_and_meet("alpha", "beta"), "alpha tried") +
                             subagent_line("beta", hold_and_meet("beta", "alpha"), "beta tried");
  ServeDaemon daemon({{"one", script, "maximum_subagents = 2\n"}}, "", "memory_mb = 200\n");
  ASSERT_NO_FATAL_FAILURE(start(daemon));
  const auto ask = daemon.deskctl({"ask", "one", "hold memory"}, 90s);
  EXPECT_EQ(ask.exit_code, 0) << describe(ask);
  std::string output;
  for (const auto& event : json_lines(daemon.journal_path("one"))) {
    if (event_kind(event) == "TOOL_FINISHED" && event_data(event, "tool") == "bash") output += event_data(event, "text");
  }
  ASSERT_FALSE(output.empty()) << file_text(daemon.journal_path("one"));
  // A digit after the name: bash's "Killed" line quotes the command, whose text holds the bare name.
  const auto survived = [&](const std::string& name) { return std::regex_search(output, std::regex(name + "-survived-[0-9]")); };
  const bool both = survived("alpha") && survived("beta");
  EXPECT_FALSE(both) << "two subagents held 115 MiB each at once under memory_mb = 200\n" << output;
  EXPECT_THAT(output, HasSubstr("memory limit")) << output;
}

}  // namespace
}  // namespace deskd::e2e
