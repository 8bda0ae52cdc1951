// The API gate end to end, continued (see api_gate_e2e_test.cpp): the ledger's hash chain
// as `deskctl ledger --verify` checks it, edited, cut and reordered; a deskd killed with
// SIGKILL in the middle of a desk's orders, after which every order the broker received has
// its ledger line; and what a desk can send that is not a request the gate can check.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <signal.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "e2e/api_gate_fixture.h"

namespace deskd::e2e {
namespace {

using ::testing::AnyOf;
using ::testing::HasSubstr;
using ::testing::Not;

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream stream(text);
  for (std::string line; std::getline(stream, line);) lines.push_back(line);
  return lines;
}

void write_lines(const std::string& path, const std::vector<std::string>& lines) {
  std::ofstream file(path, std::ios::trunc);  // the same inode and owner: deskd's
  for (const auto& line : lines) file << line << "\n";
}

class ApiGateLedgerE2eTest : public ApiGateE2eTest {
 protected:
  DeskctlResult verify(const ServeDaemon& daemon) const { return daemon.deskctl({"ledger", kGateDesk, "--verify"}); }
};

TEST_P(ApiGateLedgerE2eTest, TheLedgerVerifiesAndAnEditedRemovedOrReorderedLineIsFound) {
  auto daemon = start_daemon({{
      "curl -sS -m 30 " + url("/quote?i=NSE:INFY"),
      "curl -sS -m 30 " + url("/user/margins"),
      "curl -sS -m 30 " + url("/portfolio/positions"),
      "curl -sS -m 30 " + url("/quote?i=NSE:TCS"),
  }});
  ASSERT_NE(daemon, nullptr);
  const auto outcomes = turn(*daemon);
  ASSERT_EQ(outcomes.size(), 4u);
  const std::string path = ledger_path(*daemon);
  const std::vector<std::string> original = lines_of(file_text(path));
  // Each allowed call: allowed then answered; the refused one: denied.
  ASSERT_GE(original.size(), 7u) << file_text(path);
  for (const auto& line : original) EXPECT_THAT(line, Not(HasSubstr(access_token_)));

  const DeskctlResult shown = daemon->deskctl({"ledger", kGateDesk});
  EXPECT_EQ(shown.exit_code, 0) << shown.error_output;
  EXPECT_THAT(shown.output, HasSubstr("/quote?i=NSE:INFY"));
  EXPECT_THAT(shown.output, HasSubstr("/user/margins"));
  const DeskctlResult intact = verify(*daemon);
  EXPECT_EQ(intact.exit_code, 0) << intact.output << intact.error_output;
  EXPECT_THAT(intact.output, HasSubstr("ledger intact: " + std::to_string(original.size()) + " lines"));

  struct Tampering {
    const char* what;
    std::vector<std::string> lines;
    std::vector<std::string> named;  // what the problem must say
  };
  std::vector<Tampering> tamperings;
  {
    auto edited = original;
    const auto at = edited[1].find("\"status\":");
    ASSERT_NE(at, std::string::npos) << edited[1];
    edited[1].insert(at + 9, "1");  // a status of 1200, or 1403: the line's hash changes
    // Line 3's prev no longer matches line 2's hash.
    tamperings.push_back({"an edited line 2", edited, {"ledger.jsonl:3: prev", "(ledger.jsonl:2)"}});
  }
  {
    auto removed = original;
    removed.erase(removed.begin() + 1);
    tamperings.push_back({"a removed line 2", removed, {"ledger.jsonl:2: seq is 3 where 2 was expected"}});
  }
  {
    auto swapped = original;
    std::swap(swapped[1], swapped[2]);
    tamperings.push_back({"lines 2 and 3 swapped", swapped, {"ledger.jsonl:2: seq is 3 where 2 was expected"}});
  }
  {
    auto cut = original;
    cut.pop_back();
    tamperings.push_back(
        {"the last line removed", cut, {"ledger.head: names line " + std::to_string(original.size())}});
  }
  for (const auto& tampering : tamperings) {
    SCOPED_TRACE(tampering.what);
    write_lines(path, tampering.lines);
    const DeskctlResult found = verify(*daemon);
    EXPECT_EQ(found.exit_code, 1) << found.output << found.error_output;
    const std::string said = found.output + found.error_output;
    EXPECT_THAT(said, Not(HasSubstr("ledger intact")));
    EXPECT_THAT(said, HasSubstr("ledger NOT intact"));
    for (const auto& name : tampering.named) EXPECT_THAT(said, HasSubstr(name)) << "the problem does not name the line";
    write_lines(path, original);
    EXPECT_EQ(verify(*daemon).exit_code, 0) << "restored";
  }
}

TEST_P(ApiGateLedgerE2eTest, AfterKillNineEveryRequestTheBrokerReceivedHasItsLedgerLine) {
  const std::string orders =
      "python3 -c \"\nimport http.client, ssl\n"
      "connection = http.client.HTTPSConnection('broker.test', " +
      std::to_string(broker_.port()) +
      ", context=ssl.create_default_context(), timeout=30)\nsent = 0\n"
      "try:\n"
      "    for n in range(2000):\n"
      "        body = 'tradingsymbol=INFY&exchange=NSE&transaction_type=BUY&order_type=LIMIT&quantity=1&price=1500"
      "&product=CNC&validity=DAY'\n"
      "        connection.request('POST', '/orders/iceberg?n=%d' % n, body, "
      "{'Content-Type': 'application/x-www-form-urlencoded'})\n"
      "        connection.getresponse().read(); sent += 1\n"
      "except Exception as error:\n"
      "    print('stopped:', error)\n"
      "print('sent', sent)\n\"";
  auto daemon = start_daemon({{orders}});
  ASSERT_NE(daemon, nullptr);
  auto pending = begin_turn(*daemon);
  const auto deadline = std::chrono::steady_clock::now() + 30s;
  while (broker_.requests_to("/orders/iceberg").size() < 50 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(5ms);
  }
  daemon->process().signal(SIGKILL);
  EXPECT_EQ(daemon->process().wait(10s), 128 + SIGKILL);
  pending.asked.reset();

  const auto received = broker_.requests_to("/orders/iceberg");
  ASSERT_GE(received.size(), 50u) << "the desk's orders did not flow";
  std::set<std::string> recorded;
  for (const auto& line : ledger(*daemon)) {
    if (line.contains("outcome") && line.at("outcome") == "allowed" && line.at("path").is_string()) {
      recorded.insert(std::string(line.at("path").as_string()));
    }
  }
  std::size_t missing = 0;
  for (const auto& request : received) {
    if (!recorded.contains(request_field(request, "path"))) {
      ++missing;
      ADD_FAILURE() << "the broker received " << request_field(request, "path") << " with no ledger line";
    }
  }
  EXPECT_EQ(missing, 0u) << received.size() << " received, " << recorded.size() << " allowed in the ledger";

  // The chain survives the kill: a new deskd verifies it whole. The interrupted turn runs
  // again after a restart; its script line is now a harmless one.
  std::ofstream(daemon->script_path(kGateDesk), std::ios::trunc) << scripted_turn({bash_call("true")});
  std::string why;
  ASSERT_TRUE(daemon->start({}, &why)) << why;
  const DeskctlResult intact = daemon->deskctl({"ledger", kGateDesk, "--verify"});
  EXPECT_EQ(intact.exit_code, 0) << intact.output << intact.error_output;
  EXPECT_THAT(intact.output, HasSubstr("ledger intact"));
}

TEST_P(ApiGateLedgerE2eTest, MalformedTooLargeAndUnreachableRequestsGet400413And502) {
  const std::string garbage =
      "python3 -c \"\nimport socket, ssl\ncontext = ssl.create_default_context()\n"
      "raw = socket.create_connection(('broker.test', " +
      std::to_string(broker_.port()) +
      "), timeout=30)\n"
      "tls = context.wrap_socket(raw, server_hostname='broker.test')\n"
      "tls.sendall(b'THIS IS NOT HTTP\\r\\n\\r\\n')\nprint(tls.recv(4096).decode(errors='replace'))\n\"";
  auto daemon = start_daemon(
      {{
           garbage,
           "head -c 2097152 /dev/zero > /tmp/big; " +
               curl("-H 'Content-Type: application/octet-stream' --data-binary @/tmp/big " + url("/orders/iceberg")),
           curl(url("/quote?i=NSE:INFY")),
       },
       {curl(url("/quote?i=NSE:INFY"))}});
  ASSERT_NE(daemon, nullptr);
  const auto outcomes = turn(*daemon);
  ASSERT_EQ(outcomes.size(), 3u);
  EXPECT_THAT(outcomes[0].text, HasSubstr("HTTP/1.1 400")) << describe(outcomes[0]);
  EXPECT_THAT(outcomes[1].text, HasSubstr("status=413")) << describe(outcomes[1]);
  EXPECT_THAT(outcomes[1].text, HasSubstr("too large")) << describe(outcomes[1]);
  // deskd is still serving: the next request goes through.
  EXPECT_THAT(outcomes[2].text, HasSubstr("status=200")) << describe(outcomes[2]);
  EXPECT_TRUE(broker_.requests_to("/orders").empty()) << "an unchecked body went through";

  broker_.stop();
  const auto down = turn(*daemon);
  ASSERT_EQ(down.size(), 1u);
  EXPECT_THAT(down[0].text, HasSubstr("status=502")) << describe(down[0]);
  EXPECT_THAT(down[0].text, HasSubstr("could not be reached")) << describe(down[0]);
  EXPECT_THAT(down[0].text, AnyOf(HasSubstr("refused"), HasSubstr("onnect"))) << "no reason: " << describe(down[0]);
  EXPECT_TRUE(daemon->process().running());
}

INSTANTIATE_TEST_SUITE_P(RootAndUnprivileged, ApiGateLedgerE2eTest, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& tested) {
                           return tested.param ? "unprivileged" : "root";
                         });

}  // namespace
}  // namespace deskd::e2e
