// `deskd serve` over its life: proposals decided by the user, a schedule firing (once, even
// when a crash kept its state from being saved), kill -9
// and restart, SIGTERM, systemd's notifications, many clients and a stuck one, and a desk
// that cannot start — the built binaries as processes, asserting on what a user sees.

#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <signal.h>
#include <linux/sockios.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <boost/json.hpp>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <latch>
#include <map>
#include <sstream>
#include <thread>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "e2e/daemon_fixture.h"
#include "e2e/serve_test_support.h"

namespace deskd::e2e {
namespace {

namespace fs = std::filesystem;
using ::testing::ContainsRegex;
using ::testing::HasSubstr;
using ::testing::MatchesRegex;
using ::testing::Not;

// --- proposals ---

// The newest open proposal of `desk`, from `deskctl --json proposals`.
std::string open_proposal(const ServeDaemon& daemon, const std::string& desk) {
  const auto listed = daemon.deskctl({"--json", "proposals", desk});
  std::string id;
  const auto reply = parsed(listed.output);
  const json::value* proposals = reply.if_contains("proposals");
  if (proposals == nullptr || !proposals->is_array()) return {};
  for (const auto& proposal : proposals->as_array()) {
    if (field(proposal.as_object(), "status") == "open") id = field(proposal.as_object(), "id");
  }
  return id;
}

TEST_F(ServeE2eTest, ProposalsAreListedAcceptedRejectedAndRefusedWhenTheFileChanged) {
  const auto proposing = [](const std::string& content) {
    return R"({"steps": [{"tool_calls": [{"name": "propose_file_change", "input": {"path": "plan.md", "content": ")" + content +
           R"(\n", "reason": "a tighter plan"}}]}, {"text": "proposed"}]})" "\n";
  };
  ServeDaemon daemon({{"one", proposing("plan v2") + proposing("plan v3") + proposing("plan v4")}});
  ASSERT_NO_FATAL_FAILURE(start(daemon));
  const std::string plan = daemon.desk_directory("one") + "/plan.md";

  const auto first = daemon.deskctl({"ask", "one", "propose a plan"});
  ASSERT_EQ(first.exit_code, 0) << describe(first);
  EXPECT_THAT(first.output, HasSubstr("stored: a change to plan.md"));
  const std::string accepted = open_proposal(daemon, "one");
  ASSERT_FALSE(accepted.empty());
  const auto listed = daemon.deskctl({"proposals"});
  EXPECT_EQ(listed.exit_code, 0) << describe(listed);
  EXPECT_THAT(listed.output, HasSubstr(accepted));
  EXPECT_THAT(listed.output, HasSubstr(plan));
  EXPECT_THAT(listed.output, HasSubstr("+plan v2"));
  EXPECT_EQ(file_text(plan), "plan v1\n");

  const auto accept = daemon.deskctl({"accept", accepted});
  EXPECT_EQ(accept.exit_code, 0) << describe(accept);
  EXPECT_EQ(file_text(plan), "plan v2\n");
  const auto again = daemon.deskctl({"accept", accepted});
  EXPECT_EQ(again.exit_code, 1) << describe(again);
  EXPECT_THAT(again.error_output, HasSubstr("already accepted"));

  const auto second = daemon.deskctl({"ask", "one", "propose another"});
  ASSERT_EQ(second.exit_code, 0) << describe(second);
  const std::string rejected = open_proposal(daemon, "one");
  ASSERT_FALSE(rejected.empty());
  ASSERT_NE(rejected, accepted);
  const auto reject = daemon.deskctl({"reject", rejected});
  EXPECT_EQ(reject.exit_code, 0) << describe(reject);
  EXPECT_EQ(file_text(plan), "plan v2\n");

  const auto third = daemon.deskctl({"ask", "one", "propose a third"});
  ASSERT_EQ(third.exit_code, 0) << describe(third);
  const std::string refused = open_proposal(daemon, "one");
  ASSERT_FALSE(refused.empty());
  ASSERT_NE(refused, rejected);
  std::ofstream(plan) << "edited by hand\n";
  const auto stale = daemon.deskctl({"accept", refused});
  EXPECT_EQ(stale.exit_code, 1) << describe(stale);
  EXPECT_THAT(stale.error_output, HasSubstr("changed"));
  EXPECT_EQ(file_text(plan), "edited by hand\n");

  std::map<std::string, std::string> decided;  // kind by proposal
  for (const auto& event : json_lines(daemon.journal_path("one"))) {
    if (event_kind(event).starts_with("PROPOSAL_")) decided[event_data(event, "proposal")] += event_kind(event) + " ";
  }
  EXPECT_EQ(decided[accepted], "PROPOSAL_ACCEPTED PROPOSAL_REFUSED ");
  EXPECT_EQ(decided[rejected], "PROPOSAL_REJECTED ");
  EXPECT_EQ(decided[refused], "PROPOSAL_REFUSED ");
}

// --- schedules ---

TEST_F(ServeE2eTest, AScheduleFiresAtItsIndiaTimeAndNeverBefore) {
  using namespace std::chrono;
  const auto target = ceil<seconds>(system_clock::now()) + 4s;
  const auto india = target + 5h + 30min;
  const auto of_day = india - floor<days>(india);
  if (of_day < 10s || of_day > 24h - 10s) GTEST_SKIP() << "too close to India midnight for a same-day schedule";
  const hh_mm_ss india_clock{floor<seconds>(of_day)};
  char time_text[16];
  std::snprintf(time_text, sizeof time_text, "%02d:%02d:%02d", static_cast<int>(india_clock.hours().count()),
                static_cast<int>(india_clock.minutes().count()), static_cast<int>(india_clock.seconds().count()));
  // The trigger's "received" is UTC: "YYYY-MM-DDTHH:MM:SS...Z".
  const year_month_day utc_date{floor<days>(target)};
  const hh_mm_ss utc_clock{floor<seconds>(target - floor<days>(target))};
  char utc_text[32];
  std::snprintf(utc_text, sizeof utc_text, "%04d-%02u-%02uT%02d:%02d:%02d", static_cast<int>(utc_date.year()),
                static_cast<unsigned>(utc_date.month()), static_cast<unsigned>(utc_date.day()),
                static_cast<int>(utc_clock.hours().count()), static_cast<int>(utc_clock.minutes().count()),
                static_cast<int>(utc_clock.seconds().count()));

  ServeDaemon daemon({{"one", R"({"text": "scheduled answer"})" "\n", "",
                       "[[desk.schedule]]\nname = \"soon\"\ntime = \"" + std::string(time_text) +
                           "\"\ntext = \"the schedule speaks\"\n"}});
  ASSERT_NO_FATAL_FAILURE(start(daemon));
  if (system_clock::now() > target - 500ms) {
    GTEST_SKIP() << "deskd took too long to start; the schedule time " << time_text << " has passed";
  }
  auto events = daemon.follow("one", /*replay=*/true);
  ASSERT_TRUE(events);
  const auto is_scheduled = [](const json::object& event) {
    return event_kind(event) == "TRIGGER_ACCEPTED" && event_data(event, "source") == "schedule";
  };
  const auto accepted = events->wait_for_event(is_scheduled, 25s);
  const auto seen_at = system_clock::now();
  ASSERT_TRUE(accepted) << "no scheduled trigger by " << time_text << " India time + 20 s";
  EXPECT_GE(seen_at, target);
  EXPECT_EQ(event_data(*accepted, "schedule"), "soon");
  EXPECT_EQ(event_data(*accepted, "text"), "the schedule speaks");
  EXPECT_GE(event_data(*accepted, "received").substr(0, 19), std::string(utc_text)) << json::serialize(*accepted);
  const std::string trigger = event_data(*accepted, "id");
  const auto finished = events->wait_for_event(is_event("TURN_FINISHED", trigger), 20s);
  ASSERT_TRUE(finished);
  EXPECT_EQ(event_data(*finished, "reply"), "scheduled answer");
}

// A crash between a firing's journal line and the save of schedules.json, made by putting
// back the file deskd saved before the firing while deskd is down: the restarted deskd's
// catch-up finds the firing in the journal and does not run it a second time.
TEST_F(ServeE2eTest, AFiringWhoseStateWasNotSavedRunsOnceAfterARestart) {
  using namespace std::chrono;
  const auto target = ceil<seconds>(system_clock::now()) + 4s;
  const auto india = target + 5h + 30min;
  const auto of_day = india - floor<days>(india);
  if (of_day < 10s || of_day > 24h - 10s) GTEST_SKIP() << "too close to India midnight for a same-day schedule";
  const hh_mm_ss india_clock{floor<seconds>(of_day)};
  char time_text[16];
  std::snprintf(time_text, sizeof time_text, "%02d:%02d:%02d", static_cast<int>(india_clock.hours().count()),
                static_cast<int>(india_clock.minutes().count()), static_cast<int>(india_clock.seconds().count()));
  ServeDaemon daemon({{"one", R"({"text": "scheduled answer"})" "\n" R"({"text": "a second run"})" "\n", "",
                       "[[desk.schedule]]\nname = \"soon\"\ntime = \"" + std::string(time_text) +
                           "\"\ntext = \"the schedule speaks\"\n"}});
  ASSERT_NO_FATAL_FAILURE(start(daemon));
  if (system_clock::now() > target - 500ms) {
    GTEST_SKIP() << "deskd took too long to start; the schedule time " << time_text << " has passed";
  }
  const std::string state_file = daemon.folder() + "/state/desks/one/schedules.json";
  const std::string saved_before_the_firing = file_text(state_file);
  ASSERT_FALSE(saved_before_the_firing.empty());
  const auto is_scheduled = [](const json::object& event) {
    return event_kind(event) == "TRIGGER_ACCEPTED" && event_data(event, "source") == "schedule";
  };
  {
    auto events = daemon.follow("one", /*replay=*/true);
    ASSERT_TRUE(events);
    const auto accepted = events->wait_for_event(is_scheduled, 25s);
    ASSERT_TRUE(accepted) << "no scheduled trigger by " << time_text << " India time + 20 s";
    ASSERT_TRUE(events->wait_for_event(is_event("TURN_FINISHED", event_data(*accepted, "id")), 20s));
  }
  daemon.process().signal(SIGKILL);
  ASSERT_EQ(daemon.process().wait(), 128 + SIGKILL);
  std::ofstream(state_file, std::ios::trunc) << saved_before_the_firing;

  ASSERT_NO_FATAL_FAILURE(start(daemon));
  // The catch-up has run once the scheduler saved its state again.
  for (int tries = 0; tries < 250 && file_text(state_file) == saved_before_the_firing; ++tries) {
    std::this_thread::sleep_for(20ms);
  }
  ASSERT_NE(file_text(state_file), saved_before_the_firing) << "the restarted scheduler saved nothing";
  std::this_thread::sleep_for(300ms);
  int firings = 0;
  for (const auto& event : json_lines(daemon.journal_path("one"))) firings += is_scheduled(event) ? 1 : 0;
  EXPECT_EQ(firings, 1) << file_text(daemon.journal_path("one"));
  EXPECT_THAT(file_text(daemon.session_path("one")), Not(HasSubstr("a second run")));
}

// --- crashes and stops ---

TEST_F(ServeE2eTest, AfterKill9ARestartedDeskdRunsTheInterruptedTriggerAgain) {
  ServeDaemon daemon({{"one", kLongTurn}});
  ASSERT_NO_FATAL_FAILURE(start(daemon));
  std::string trigger;
  {
    auto events = daemon.follow("one");
    ASSERT_TRUE(events);
    const auto send = daemon.deskctl({"send", "one", "interrupted message"});
    ASSERT_EQ(send.exit_code, 0) << describe(send);
    trigger = trimmed(send.output);
    ASSERT_TRUE(events->wait_for_event(is_event("TOOL_CALLED")));
    daemon.process().signal(SIGKILL);
    EXPECT_EQ(daemon.process().wait(), 128 + SIGKILL);
  }
  struct stat left_behind {};
  ASSERT_EQ(::lstat(daemon.socket_path().c_str(), &left_behind), 0) << "a killed deskd leaves its socket";
  ASSERT_TRUE(S_ISSOCK(left_behind.st_mode));

  // The script starts again at its first turn: make that one quick.
  std::ofstream(daemon.script_path("one")) << R"({"text": "redelivered and done"})" "\n";
  ASSERT_NO_FATAL_FAILURE(start(daemon));
  auto events = daemon.follow("one", /*replay=*/true);
  ASSERT_TRUE(events);
  ASSERT_TRUE(events->wait_for_event(is_event("TURN_STARTED", trigger))) << "the trigger " << trigger << " did not run again";
  const auto finished = events->wait_for_event(is_event("TURN_FINISHED", trigger));
  ASSERT_TRUE(finished);
  EXPECT_EQ(event_data(*finished, "reply"), "redelivered and done");
  // The model was told.
  EXPECT_THAT(file_text(daemon.session_path("one")), HasSubstr("re-delivered after a restart"));
}

TEST_F(ServeE2eTest, SigtermStopsCleanlyWithinTheGraceWhileATurnRuns) {
  ServeDaemon daemon({{"one", kLongTurn}});
  ASSERT_NO_FATAL_FAILURE(start(daemon));
  auto events = daemon.follow("one");
  ASSERT_TRUE(events);
  const auto send = daemon.deskctl({"send", "one", "wait a while"});
  ASSERT_EQ(send.exit_code, 0) << describe(send);
  ASSERT_TRUE(events->wait_for_event(is_event("TOOL_CALLED")));

  const auto signalled = Clock::now();
  EXPECT_EQ(daemon.stop(), 0) << daemon.process().error_output();
  const auto took = since(signalled);
  EXPECT_GE(took, 900ms) << "the running turn did not get its grace of 1 s";
  EXPECT_LT(took, 6s);
  EXPECT_FALSE(fs::exists(daemon.socket_path()));
  const auto journal = json_lines(daemon.journal_path("one"));
  ASSERT_FALSE(journal.empty());
  EXPECT_EQ(event_kind(journal.back()), "DESK_STOPPED");
  EXPECT_LT(find_event(journal, is_event("TURN_STOPPED", trimmed(send.output))), journal.size());
}

TEST_F(ServeE2eTest, TellsSystemdReadyAndStopping) {
  ServeDaemon daemon({{"one", R"({"text": "hi"})" "\n"}});
  const std::string notify_path = daemon.folder() + "/notify.sock";
  const int notify = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  ASSERT_GE(notify, 0);
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  std::snprintf(address.sun_path, sizeof address.sun_path, "%s", notify_path.c_str());
  ASSERT_EQ(::bind(notify, reinterpret_cast<sockaddr*>(&address), sizeof address), 0);
  const auto receive = [&](std::chrono::milliseconds timeout) -> std::string {
    pollfd waiting{notify, POLLIN, 0};
    if (::poll(&waiting, 1, static_cast<int>(timeout.count())) <= 0) return "(nothing)";
    char message[4096];
    const ssize_t size = ::recv(notify, message, sizeof message, 0);
    return size > 0 ? std::string(message, static_cast<std::size_t>(size)) : "(nothing)";
  };
  ASSERT_NO_FATAL_FAILURE(start(daemon, {"NOTIFY_SOCKET=" + notify_path}));
  EXPECT_THAT(receive(30s), HasSubstr("READY=1"));
  // STATUS= lines come as desks start (serve_startup_e2e_test); the one after is STOPPING=1.
  std::string status = receive(30s);
  EXPECT_THAT(status, HasSubstr("STATUS=1 of 1 desks running"));
  daemon.process().signal(SIGTERM);
  EXPECT_THAT(receive(30s), HasSubstr("STOPPING=1"));
  EXPECT_EQ(daemon.process().wait(), 0) << daemon.process().error_output();
  ::close(notify);
}

// --- many clients ---

TEST_F(ServeE2eTest, ManyClientsAreAnsweredAndAStuckFollowerDelaysNoTurn) {
  // Turn 1 prints a lot in many tool calls: far more events than a socket buffer holds.
  std::string calls;
  for (int index = 0; index < 300; ++index) {
    calls += std::string(index > 0 ? ", " : "") +
             R"({"name": "bash", "input": {"command": "printf '%3000s\\n' call-)" + std::to_string(index) + R"("}})";
  }
  ServeDaemon daemon({{"one", R"({"steps": [{"tool_calls": [)" + calls + R"(]}, {"text": "printed a lot"}]})" "\n"
                              R"({"text": "quick answer"})" "\n"}});
  ASSERT_NO_FATAL_FAILURE(start(daemon));

  ControlConnection stuck = daemon.connect();
  ASSERT_TRUE(stuck.connected());
  ASSERT_TRUE(stuck.send({{"id", 1}, {"op", "follow"}, {"desk", "one"}}));  // and never reads

  constexpr int kClients = 20;
  std::atomic<int> answered{0};
  std::latch all_connected(kClients);
  std::vector<std::thread> clients;
  for (int index = 0; index < kClients; ++index) {
    clients.emplace_back([&] {
      ControlConnection client = daemon.connect();
      all_connected.arrive_and_wait();
      if (!client.connected()) return;
      if (!client.send_raw("{\"id\": 1, \"op\": \"desks\"}\n{\"id\": 2, \"op\": \"status\", \"desk\": \"one\"}\n")) return;
      auto desks = client.read_object(30s);
      auto status = client.read_object(30s);
      if (desks && status && field(*desks, "id") == "1" && desks->contains("desks") && field(*status, "id") == "2" &&
          status->contains("status")) {
        ++answered;
      }
    });
  }
  for (auto& client : clients) client.join();
  EXPECT_EQ(answered.load(), kClients);

  const auto big = daemon.deskctl({"ask", "one", "print a lot"}, 60s);
  EXPECT_EQ(big.exit_code, 0) << big.error_output;
  EXPECT_THAT(big.output, HasSubstr("call-299"));
  EXPECT_THAT(big.output, HasSubstr("turn finished: printed a lot"));
  int unread = 0;
  ASSERT_EQ(::ioctl(stuck.fd(), FIONREAD, &unread), 0);
  EXPECT_GT(unread, 64 * 1024) << "the stuck client's socket should be full";

  const auto quick = daemon.deskctl({"ask", "one", "anything quick?"}, 30s);
  EXPECT_EQ(quick.exit_code, 0) << describe(quick);
  EXPECT_LT(quick.elapsed, 5s);
  EXPECT_THAT(quick.output, HasSubstr("turn finished: quick answer"));

  // The stuck client's socket was full: deskd held back the rest and sends it now, in
  // order, up to the quick turn's end.
  std::vector<json::object> late;
  const auto is_quick_end = [](const json::object& event) {
    return event_kind(event) == "TURN_FINISHED" && event_data(event, "reply") == "quick answer";
  };
  EXPECT_TRUE(stuck.wait_for_event(is_quick_end, 30s, &late));
  std::size_t received = 0;
  for (const auto& event : late) received += json::serialize(event).size();
  EXPECT_GT(received, static_cast<std::size_t>(unread)) << "deskd had nothing more for the stuck client";
  EXPECT_LT(find_event(late, [](const json::object& event) {
              return event_kind(event) == "TOOL_CALLED" && json::serialize(event).find("call-299") != std::string::npos;
            }),
            late.size());
}

// --- a desk that cannot start ---

TEST_F(ServeE2eTest, ADeskWhoseSandboxCannotStartIsKeptStoppedWhileTheOtherRuns) {
  // Under a root deskd the sandbox runs as its own uid, which cannot enter a 0700 folder.
  if (::geteuid() != 0) GTEST_SKIP() << "needs a root deskd, whose sandboxes run as another uid";
  ServeDaemon daemon({{"broken", R"({"text": "never"})" "\n"}, {"one", R"({"text": "the other desk answers"})" "\n"}});
  ::chmod(daemon.desk_directory("broken").c_str(), 0700);
  ASSERT_NO_FATAL_FAILURE(start(daemon));

  const auto desks = daemon.deskctl({"desks"});
  EXPECT_EQ(desks.exit_code, 0) << describe(desks);
  EXPECT_THAT(desks.output, ContainsRegex("broken +stopped"));
  EXPECT_THAT(desks.output, ContainsRegex("one +idle"));
  EXPECT_THAT(desks.output, HasSubstr("error: starting the sandbox"));

  const auto send = daemon.deskctl({"send", "broken", "hello"});
  EXPECT_EQ(send.exit_code, 1) << describe(send);
  EXPECT_THAT(send.error_output, HasSubstr("Desk 'broken' is stopped"));

  auto events = daemon.follow("broken", /*replay=*/true);
  ASSERT_TRUE(events);
  EXPECT_TRUE(events->wait_for_event(is_event("DESK_FAILED"), 10s));

  const auto ask = daemon.deskctl({"ask", "one", "hello"});
  EXPECT_EQ(ask.exit_code, 0) << describe(ask);
  EXPECT_THAT(ask.output, HasSubstr("turn finished: the other desk answers"));
  // Why the desk never started is kept in its journal too, not only in the log.
  EXPECT_THAT(file_text(daemon.journal_path("broken")), HasSubstr("\"kind\":\"DESK_FAILED\""));
}

}  // namespace
}  // namespace deskd::e2e
