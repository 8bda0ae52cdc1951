// One world per desk (issue 11), end to end: a `deskd serve` that holds an API key in memory
// shows it to no process of any desk. The key is a canary in [model]'s api_key_file, which
// an openai desk on the fake Chat Completions server loads at start and sends with its
// request; a script desk runs beside it. Both desks run probe_scan (given the canary
// hex-encoded) in their bash, and the scan, as their turn's events report it, must find it
// nowhere: not in a process's command line, environment or memory.

#include <sys/stat.h>
#include <unistd.h>

#include <boost/json.hpp>

#include <fstream>
#include <optional>
#include <sstream>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "e2e/daemon_fixture.h"
#include "e2e/turn_tools.h"
#include "unit/model/fake_http_server.h"

namespace deskd::e2e {
namespace {

namespace json = boost::json;

// The uid of the security suite's unprivileged daemon.
constexpr uid_t kCanaryDeskdUid = 4242;
using model::testing::FakeHttpServer;
using model::testing::FakeResponse;
using ::testing::HasSubstr;
using ::testing::Not;

std::string hex(const std::string& text) {
  static const char kDigits[] = "0123456789abcdef";
  std::string encoded;
  for (unsigned char each : text) encoded += {kDigits[each >> 4], kDigits[each & 15]};
  return encoded;
}

std::string openai_chunk(const json::object& choice_delta, json::value finish_reason = nullptr) {
  const json::object body{{"id", "c1"},
                          {"object", "chat.completion.chunk"},
                          {"model", "gpt-test"},
                          {"choices", json::array{json::object{
                                          {"index", 0}, {"delta", choice_delta}, {"finish_reason", finish_reason}}}}};
  return "data: " + json::serialize(body) + "\n\n";
}

// A streamed reply calling bash with `command`, and the text reply that ends the turn.
void enqueue_bash_turn(FakeHttpServer& server, const std::string& command) {
  const json::object call{{"index", 0},
                          {"id", "call_1"},
                          {"type", "function"},
                          {"function", json::object{{"name", "bash"},
                                                    {"arguments", json::serialize(json::object{{"command", command}})}}}};
  server.enqueue(FakeResponse::event_stream({{openai_chunk({{"role", "assistant"}, {"tool_calls", json::array{call}}})},
                                             {openai_chunk(json::object{}, "tool_calls")},
                                             {"data: [DONE]\n\n"}}));
  server.enqueue(FakeResponse::event_stream({{openai_chunk({{"role", "assistant"}, {"content", "scanned"}})},
                                             {openai_chunk(json::object{}, "stop")},
                                             {"data: [DONE]\n\n"}}));
}

// The scan, with a background job beside it; its report stays in scratch/ for the failure
// message, and its last lines come back in the tool's result. No `exit`: that would end the
// desk's terminal.
std::string scan_command(const std::string& probe, const std::string& canary) {
  return "sleep 60 &\nuntil [ \"$(cat /proc/$!/comm 2>/dev/null)\" = sleep ]; do :; done\n" + probe + " " + hex(canary) +
         " > scratch/scan.txt 2>&1; echo \"scan-status=$?\" >> scratch/scan.txt\n"
         "echo \"pid1-environ-bytes=$(cat /proc/1/environ 2>/dev/null | wc -c)\" >> scratch/scan.txt\n"
         "kill $! 2>/dev/null; cat scratch/scan.txt";
}

class ServeCanaryE2eTest : public ::testing::Test {
 protected:
  // What the desk's turn reported for its scan; adds a failure for every way it leaked.
  void expect_clean_scan(const ServeDaemon& daemon, const std::string& desk, const std::vector<ToolOutcome>& outcomes) {
    SCOPED_TRACE("desk " + desk);
    ASSERT_EQ(outcomes.size(), 1u) << "the scan did not run as the turn's one tool call";
    const std::string& report = outcomes[0].text;
    // After a newline, so that every process's line starts with "\npid=".
    const std::string whole = "\n" + file_text(daemon.desk_directory(desk) + "/scratch/scan.txt");
    ASSERT_THAT(report, HasSubstr("found=")) << "probe_scan did not finish:\n" << report;
    std::string leaks;
    std::istringstream lines(whole);
    for (std::string line; std::getline(lines, line);) {
      if (line.rfind("pid=", 0) == 0 && line.find("=found") != std::string::npos) leaks += "  " + line + "\n";
    }
    EXPECT_EQ(leaks, "") << "deskd's API key is visible to desk " << desk << " in:\n" << leaks;
    if (leaks.empty()) {  // the lines agree with the summary and the exit status
      EXPECT_THAT(report, HasSubstr("found=0 ")) << whole;
      EXPECT_THAT(report, HasSubstr("scan-status=0")) << whole;
    }
    EXPECT_THAT(whole, HasSubstr("\npid=1 ")) << "pid 1 was not scanned:\n" << whole;
    const auto pid_one = whole.find("\npid=1 ");
    const std::string pid_one_line =
        pid_one == std::string::npos ? "" : whole.substr(pid_one + 1, whole.find('\n', pid_one + 1) - pid_one - 1);
    EXPECT_TRUE(pid_one_line.find(" environ=denied ") != std::string::npos ||
                report.find("pid1-environ-bytes=0") != std::string::npos)
        << "pid 1's environment is readable and not empty:\n" << whole;
    EXPECT_THAT(report, Not(HasSubstr(canary_)));
  }

  // Both desks scan; deskd runs as the test's uid (root), or as `unprivileged_uid`.
  void scan_both_desks(std::optional<uid_t> unprivileged_uid) {
    FakeHttpServer server;
    ServeDaemon daemon(
        {DeskSetup{.name = "alpha", .script = "", .model = "provider = \"openai\"\n"},
         DeskSetup{.name = "one", .script = "", .model = "provider = \"script\"\nscript = \"one.jsonl\"\n"}},
        "", "[model]\nprovider = \"openai\"\nmodel = \"gpt-test\"\nbase_url = \"" + server.url("/v1") +
                "\"\napi_key_file = \"api-key.txt\"\nmax_retries = 0\n");
    std::ofstream(daemon.folder() + "/api-key.txt") << canary_ << "\n";
    ::chmod((daemon.folder() + "/api-key.txt").c_str(), 0600);
    // In each desk's own folder, so that the probe is in sight under any host view.
    for (const char* desk : {"alpha", "one"}) copy_probe_into_desk(daemon.desk_directory(desk), DESKD_PROBE_SCAN);
    const std::string relative_probe = "tools/probe_scan";
    enqueue_bash_turn(server, scan_command(relative_probe, canary_));
    std::ofstream(daemon.script_path("one")) << scripted_turn({bash_call(scan_command(relative_probe, canary_))});
    if (unprivileged_uid) daemon.run_as(*unprivileged_uid);
    std::string why;
    ASSERT_TRUE(daemon.start({}, &why)) << why;

    // The openai desk first: its request carries the key, so deskd has certainly read it.
    const auto alpha = run_turn(daemon, "alpha", "scan");
    ASSERT_FALSE(server.requests().empty());
    EXPECT_EQ(server.requests().at(0).header("authorization"), "Bearer " + canary_);
    expect_clean_scan(daemon, "alpha", alpha);
    expect_clean_scan(daemon, "one", run_turn(daemon, "one", "scan"));
    if (unprivileged_uid) {
      // What the desk's bash wrote is its host uid's: the ordinary user's, so deskd was.
      struct stat written {};
      ASSERT_EQ(::stat((daemon.desk_directory("one") + "/scratch/scan.txt").c_str(), &written), 0);
      EXPECT_EQ(written.st_uid, *unprivileged_uid) << "deskd did not run as the unprivileged uid";
    }
  }

  std::string canary_ = unique_text("sk-deskd-canary");
};

TEST_F(ServeCanaryE2eTest, TheApiKeyInARootDeskdsMemoryIsInNoProcessOfAnyDesk) { scan_both_desks(std::nullopt); }

// An ordinary user's deskd: its desks share its host uid, so only the sandbox keeps them
// out of its memory (a fork of deskd as pid 1 was readable through /proc/1/mem).
TEST_F(ServeCanaryE2eTest, TheApiKeyInAnUnprivilegedDeskdsMemoryIsInNoProcessOfAnyDesk) {
  scan_both_desks(kCanaryDeskdUid);
}

}  // namespace
}  // namespace deskd::e2e
