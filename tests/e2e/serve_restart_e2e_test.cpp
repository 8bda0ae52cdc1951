// `deskd serve` across restarts, as a user sees it: every send acknowledged before kill -9
// (many at once, sharing the journal's flushes) is in the journal and runs after the
// restart, a /pause journaled before kill -9 is a command after the restart, an answered
// /pause holds across kill -9 and restarts, "events --from" an id from before the restart returns what
// came after it, a damaged journal line is reported and the rest recovered, and a big
// journal is compacted while the socket answers.

#include <signal.h>
#include <unistd.h>

#include <boost/json.hpp>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "e2e/daemon_fixture.h"
#include "e2e/serve_test_support.h"

namespace deskd::e2e {
namespace {

namespace fs = std::filesystem;
using ::testing::AnyOf;
using ::testing::Eq;
using ::testing::HasSubstr;
using ::testing::Not;
using namespace std::string_literals;

// The events `deskctl --json events DESK [--from ID]` prints.
std::vector<json::object> listed_events(const ServeDaemon& daemon, const std::string& desk, const std::string& from = "") {
  std::vector<std::string> arguments{"--json", "events", desk};
  if (!from.empty()) arguments.insert(arguments.end(), {"--from", from});
  const auto listed = daemon.deskctl(arguments);
  EXPECT_EQ(listed.exit_code, 0) << describe(listed);
  std::vector<json::object> events;
  std::istringstream lines(listed.output);
  for (std::string line; std::getline(lines, line);) {
    if (!line.empty()) events.push_back(parsed(line));
  }
  return events;
}

std::uint64_t number_of(const json::object& event) { return std::stoull(field(event, "id").substr(2)); }

void kill_hard(ServeDaemon& daemon) {
  daemon.process().signal(SIGKILL);
  EXPECT_EQ(daemon.process().wait(), 128 + SIGKILL);
}

void append_line(const std::string& path, const std::string& line) { std::ofstream(path, std::ios::app) << line << "\n"; }

TEST_F(ServeE2eTest, APauseJournaledBeforeKill9IsACommandAfterTheRestart) {
  ServeDaemon daemon({{"one", R"({"text": "a model answer"})" "\n"}});
  ASSERT_NO_FATAL_FAILURE(start(daemon));
  const auto status = daemon.deskctl({"ask", "one", "/status"});
  ASSERT_EQ(status.exit_code, 0) << describe(status);
  // deskd journals a trigger before it handles it; it dies in between, as kill -9 can make
  // it: the /pause's line is the one it wrote for /status, as a /pause.
  kill_hard(daemon);
  json::object paused;
  for (const auto& event : json_lines(daemon.journal_path("one"))) {
    if (event_kind(event) == "TRIGGER_ACCEPTED" && event_data(event, "text") == "/status") paused = event;
  }
  ASSERT_EQ(event_data(paused, "kind"), "command");
  paused["data"].as_object()["text"] = "/pause";
  paused["data"].as_object()["id"] = "t-00000000000000aa";
  append_line(daemon.journal_path("one"), json::serialize(paused));

  ASSERT_NO_FATAL_FAILURE(start(daemon));
  auto events = daemon.follow("one", /*replay=*/true);
  ASSERT_TRUE(events);
  const auto redelivered = events->wait_for_event(is_event("TRIGGER_REDELIVERED", "t-00000000000000aa"));
  ASSERT_TRUE(redelivered);
  EXPECT_EQ(event_data(*redelivered, "as"), "command");
  const auto answered = events->wait_for_event(is_event("COMMAND_ANSWERED", "t-00000000000000aa"));
  ASSERT_TRUE(answered);
  EXPECT_EQ(event_data(*answered, "command"), "/pause");
  EXPECT_THAT(daemon.deskctl({"desks"}).output, HasSubstr("(paused)"));
  const auto ask = daemon.deskctl({"ask", "one", "anything?"});
  EXPECT_THAT(ask.output, HasSubstr("paused"));
  EXPECT_THAT(file_text(daemon.session_path("one")), Not(HasSubstr("/pause")));  // no model read it as text
}

// An answered /pause is kept: kill -9 and a clean restart both start the desk paused, and
// only /resume lets a message reach the model again.
TEST_F(ServeE2eTest, AnAnsweredPauseSurvivesKill9AndACleanRestartUntilResumed) {
  ServeDaemon daemon({{"one", R"({"text": "a model answer"})" "\n"}});
  ASSERT_NO_FATAL_FAILURE(start(daemon));
  const auto pause = daemon.deskctl({"ask", "one", "/pause"});
  ASSERT_EQ(pause.exit_code, 0) << describe(pause);
  ASSERT_THAT(pause.output, HasSubstr("Paused"));
  kill_hard(daemon);

  ASSERT_NO_FATAL_FAILURE(start(daemon));
  EXPECT_THAT(daemon.deskctl({"ask", "one", "/status"}).output, HasSubstr("Paused: yes"));
  EXPECT_THAT(daemon.deskctl({"desks"}).output, HasSubstr("(paused)"));
  const auto held = daemon.deskctl({"ask", "one", "are you there after the kill?"});
  EXPECT_EQ(held.exit_code, 0) << describe(held);
  EXPECT_THAT(held.output, HasSubstr("paused, so no model was asked"));
  ASSERT_EQ(daemon.stop(), 0);

  ASSERT_NO_FATAL_FAILURE(start(daemon));
  EXPECT_THAT(daemon.deskctl({"ask", "one", "/status"}).output, HasSubstr("Paused: yes"));
  EXPECT_THAT(daemon.deskctl({"ask", "one", "and after a clean restart?"}).output, HasSubstr("paused, so no model was asked"));
  EXPECT_THAT(file_text(daemon.session_path("one")), Not(HasSubstr("are you there")));  // no model read them

  const auto resume = daemon.deskctl({"ask", "one", "/resume"});
  ASSERT_EQ(resume.exit_code, 0) << describe(resume);
  const auto answered = daemon.deskctl({"ask", "one", "work again"});
  EXPECT_THAT(answered.output, HasSubstr("a model answer")) << describe(answered);
  kill_hard(daemon);
  ASSERT_NO_FATAL_FAILURE(start(daemon));
  EXPECT_THAT(daemon.deskctl({"ask", "one", "/status"}).output, HasSubstr("Paused: no"));
}

// Sends pipelined on several connections at once are acknowledged after one shared fsync
// (group commit); none that was acknowledged may be lost to kill -9.
TEST_F(ServeE2eTest, EverySendAcknowledgedBeforeKill9IsJournaledAndRedelivered) {
  ServeDaemon daemon({{"one", kLongTurn}});
  ASSERT_NO_FATAL_FAILURE(start(daemon));
  {
    // A turn that runs on: every message below waits (as steering), unfinished.
    auto events = daemon.follow("one");
    ASSERT_TRUE(events);
    ASSERT_EQ(daemon.deskctl({"send", "one", "start the long turn"}).exit_code, 0);
    ASSERT_TRUE(events->wait_for_event(is_event("TOOL_CALLED")));
  }
  constexpr int kConnections = 8;
  constexpr int kSendsEach = 25;
  std::vector<ControlConnection> connections;
  for (int index = 0; index < kConnections; ++index) {
    connections.push_back(daemon.connect());
    ASSERT_TRUE(connections.back().connected());
  }
  for (int round = 0; round < kSendsEach; ++round) {
    for (int index = 0; index < kConnections; ++index) {
      ASSERT_TRUE(connections[static_cast<std::size_t>(index)].send(
          json::object{{"id", round}, {"op", "send"}, {"desk", "one"}, {"text", "message " + std::to_string(index) + "." + std::to_string(round)}}));
    }
  }
  std::set<std::string> acknowledged;
  for (auto& connection : connections) {
    for (int round = 0; round < kSendsEach; ++round) {
      const auto reply = connection.read_object();
      ASSERT_TRUE(reply);
      ASSERT_EQ(field(*reply, "ok"), "true") << json::serialize(*reply);
      acknowledged.insert(field(*reply, "trigger"));
    }
  }
  ASSERT_EQ(acknowledged.size(), std::size_t{kConnections * kSendsEach});
  kill_hard(daemon);

  std::set<std::string> journaled;
  for (const auto& event : json_lines(daemon.journal_path("one"))) {
    if (event_kind(event) == "TRIGGER_ACCEPTED") journaled.insert(event_data(event, "id"));
  }
  for (const auto& id : acknowledged) EXPECT_TRUE(journaled.contains(id)) << id << " was acknowledged, not journaled";

  std::ofstream(daemon.script_path("one")) << R"({"text": "all taken"})" "\n";
  ASSERT_NO_FATAL_FAILURE(start(daemon));
  auto events = daemon.follow("one", /*replay=*/true);
  ASSERT_TRUE(events);
  // The long turn's own trigger is re-delivered too; every acknowledged one must be.
  std::size_t missing = acknowledged.size();
  while (missing > 0) {
    const auto event = events->wait_for_event(is_event("TRIGGER_REDELIVERED"));
    ASSERT_TRUE(event) << missing << " of " << acknowledged.size() << " acknowledged triggers not re-delivered";
    missing -= acknowledged.count(event_data(*event, "trigger"));
  }
}

TEST_F(ServeE2eTest, EventsFromAnIdBeforeARestartAreTheOnesAfterIt) {
  ServeDaemon daemon({{"one", R"({"text": "first answer"})" "\n" R"({"text": "second answer"})" "\n"}});
  ASSERT_NO_FATAL_FAILURE(start(daemon));
  ASSERT_EQ(daemon.deskctl({"ask", "one", "first"}).exit_code, 0);
  const auto before = listed_events(daemon, "one");
  ASSERT_GE(before.size(), 4u);
  const json::object& middle = before[before.size() / 2];
  EXPECT_EQ(daemon.stop(), 0);
  std::ofstream(daemon.script_path("one")) << R"({"text": "second answer"})" "\n";
  ASSERT_NO_FATAL_FAILURE(start(daemon));
  ASSERT_EQ(daemon.deskctl({"ask", "one", "second"}).exit_code, 0);

  const auto after = listed_events(daemon, "one", field(middle, "id"));
  ASSERT_FALSE(after.empty());
  std::uint64_t last = number_of(middle);
  bool first_end = false, second_end = false, restarted = false;
  for (const auto& event : after) {
    EXPECT_GT(number_of(event), last) << "ids must grow, across the restart too: " << json::serialize(event);
    last = number_of(event);
    first_end = first_end || (event_kind(event) == "TURN_FINISHED" && event_data(event, "reply") == "first answer");
    second_end = second_end || (event_kind(event) == "TURN_FINISHED" && event_data(event, "reply") == "second answer");
    restarted = restarted || (event_kind(event) == "DESK_STARTED" && number_of(event) > number_of(before.back()));
  }
  EXPECT_TRUE(first_end) << "the events after the id from before the restart";
  EXPECT_TRUE(second_end) << "every new one";
  EXPECT_TRUE(restarted);
}

TEST_F(ServeE2eTest, ADamagedJournalLineIsReportedAndTheRestIsRecovered) {
  ServeDaemon daemon({{"one", kLongTurn}});
  ASSERT_NO_FATAL_FAILURE(start(daemon));
  std::string trigger;
  {
    auto events = daemon.follow("one");
    ASSERT_TRUE(events);
    const auto send = daemon.deskctl({"send", "one", "survive the damage"});
    ASSERT_EQ(send.exit_code, 0) << describe(send);
    trigger = trimmed(send.output);
    ASSERT_TRUE(events->wait_for_event(is_event("TOOL_CALLED")));
    kill_hard(daemon);
  }
  // A line garbled on disk, and a trigger torn mid-write (so never acknowledged).
  append_line(daemon.journal_path("one"), "{\"id\":\"e-9\",\"kind\":\"TOOL_FIN\0\0\0ISHED\"}"s);
  append_line(daemon.journal_path("one"),
              R"({"id":"e-10","time":"","desk":"one","kind":"TRIGGER_ACCEPTED","data":{"id":"t-00000000000000bb","desk":"one","source":"user","text":"buy 2 lo)");
  std::ofstream(daemon.script_path("one")) << R"({"text": "recovered and done"})" "\n";
  ASSERT_NO_FATAL_FAILURE(start(daemon));
  auto events = daemon.follow("one", /*replay=*/true);
  ASSERT_TRUE(events);
  std::vector<json::object> seen;
  ASSERT_TRUE(events->wait_for_event(is_event("TURN_FINISHED", trigger), 30s, &seen));
  std::vector<json::object> damaged;
  for (const auto& event : seen) {
    if (event_kind(event) == "JOURNAL_DAMAGED") damaged.push_back(event);
  }
  ASSERT_EQ(damaged.size(), 2u);
  EXPECT_THAT(event_data(damaged[0], "error"), HasSubstr("journal.jsonl.1:"));
  EXPECT_EQ(event_data(damaged[1], "trigger"), "t-00000000000000bb");
  EXPECT_THAT(event_data(damaged[1], "recovered"), HasSubstr("\"buy 2 lo [cut off]\""));
  EXPECT_LT(find_event(seen, is_event("TRIGGER_REDELIVERED", trigger)), seen.size());
  // A log line says it too.
  EXPECT_THAT(daemon.process().error_output(), HasSubstr("one: JOURNAL_DAMAGED t-00000000000000bb"));
}

// A journal of `megabytes` left by an earlier deskd: many finished triggers, one open.
std::string write_big_journal(const ServeDaemon& daemon, int megabytes) {
  fs::create_directories(fs::path(daemon.journal_path("one")).parent_path());
  std::ofstream journal(daemon.journal_path("one"));
  const std::string open = "t-00000000000000cc";
  journal << R"({"id":"e-1","time":"","desk":"one","kind":"TRIGGER_ACCEPTED","data":{"id":")" << open
          << R"(","desk":"one","source":"user","text":"still open","sender":"","schedule":"","received":"2026-11-30T03:44:05Z","redelivered":false,"queued_explicitly":false,"kind":"message"}})"
          << "\n";
  const std::string text(16 * 1024, 'x');
  std::uint64_t id = 2;
  for (std::uint64_t written = 0; written < static_cast<std::uint64_t>(megabytes) * 1024 * 1024; written += text.size() + 100) {
    journal << R"({"id":"e-)" << id++ << R"(","time":"","desk":"one","kind":"MODEL_TEXT","data":{"text":")" << text << "\"}}\n";
  }
  return open;
}

TEST_F(ServeE2eTest, ABigJournalIsCompactedWhileTheSocketAnswersAndTheNextStartIsQuick) {
  ServeDaemon daemon({{"one", R"({"text": "done"})" "\n"}});
  const std::string open = write_big_journal(daemon, 96);
  const auto size_before = fs::file_size(daemon.journal_path("one"));
  const auto launched = Clock::now();
  daemon.launch();
  auto states = daemon.desk_states();
  const auto answered = since(launched);
  ASSERT_FALSE(states.empty()) << daemon.process().error_output();
  EXPECT_LT(answered, 10s) << "the socket must answer while the journal is read";
  std::string state = states[0].second;
  while (state == "starting" && since(launched) < 60s) {
    std::this_thread::sleep_for(20ms);
    states = daemon.desk_states();
    ASSERT_FALSE(states.empty()) << daemon.process().error_output();
    state = states[0].second;
  }
  const auto started = since(launched);
  // Started: at once it takes up the open trigger again, so a slow machine (the sanitizer
  // build) may see that turn running.
  EXPECT_THAT(state, AnyOf(Eq("idle"), Eq("running")));
  auto events = daemon.follow("one", /*replay=*/true);
  ASSERT_TRUE(events);
  std::vector<json::object> seen;
  ASSERT_TRUE(events->wait_for_event(is_event("TURN_FINISHED", open), 30s, &seen));
  EXPECT_LT(find_event(seen, is_event("JOURNAL_COMPACTED")), seen.size());
  EXPECT_LT(fs::file_size(daemon.journal_path("one")), 16u * 1024 * 1024);
  // The journal as it was, and the lines this deskd appended before the rewrite.
  EXPECT_GE(fs::file_size(daemon.journal_path("one") + ".1"), size_before);
  std::printf("[ measured ] %ju MiB journal: socket answered after %lld ms, desk idle after %lld ms\n",
              static_cast<std::uintmax_t>(size_before >> 20), static_cast<long long>(answered.count()),
              static_cast<long long>(started.count()));

  EXPECT_EQ(daemon.stop(), 0);
  const auto again = Clock::now();
  ASSERT_NO_FATAL_FAILURE(start(daemon));
  std::printf("[ measured ] the compacted journal (%ju KiB): desk idle after %lld ms\n",
              static_cast<std::uintmax_t>(fs::file_size(daemon.journal_path("one")) >> 10),
              static_cast<long long>(since(again).count()));
  std::size_t compactions = 0;
  for (const auto& event : json_lines(daemon.journal_path("one"))) compactions += event_kind(event) == "JOURNAL_COMPACTED";
  EXPECT_EQ(compactions, 1u);  // the small journal is left as it is
}

}  // namespace
}  // namespace deskd::e2e
