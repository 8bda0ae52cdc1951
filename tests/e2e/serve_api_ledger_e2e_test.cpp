// `deskctl approvals`, `approve`, `deny`, `ledger` and the desk's /approvals against a real
// `deskd serve`: what a person sees with nothing waiting, a decision refused for an unknown
// id, and a desk's ledger shown and verified — intact, then with a line edited. The ledger
// is written here as the gate writes it (the chain of SHA-256 and ledger.head), so the test
// also pins the on-disk format deskctl verifies.

#include <openssl/evp.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "e2e/daemon_fixture.h"
#include "e2e/serve_test_support.h"

namespace deskd::e2e {
namespace {

using ::testing::HasSubstr;

std::string sha256_hex(const std::string& bytes) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int size = 0;
  EVP_Digest(bytes.data(), bytes.size(), digest, &size, EVP_sha256(), nullptr);
  std::string hex;
  char pair[3];
  for (unsigned int index = 0; index < size; ++index) {
    std::snprintf(pair, sizeof pair, "%02x", digest[index]);
    hex += pair;
  }
  return hex;
}

// Three ledger lines and the head record, as runner/egress/api_ledger.cpp writes them.
std::vector<std::string> write_ledger(const std::string& folder) {
  std::filesystem::create_directories(folder);
  std::vector<std::string> lines;
  std::string prev(64, '0');
  for (int seq = 1; seq <= 3; ++seq) {
    const std::string line = R"({"seq":)" + std::to_string(seq) + R"(,"at":"2026-12-01T09:3)" + std::to_string(seq) +
                             R"(:00.000+05:30","api":"kite","method":"GET","origin":"https://api.kite.trade",)"
                             R"("path":"/quote?i=NSE:INFY","rule":"quotes","outcome":"answered","status":200,)"
                             R"("request_bytes":80,"response_bytes":300,"request_sha256":"","response_sha256":"",)"
                             R"("reason":"","approval":"","prev":")" +
                             prev + R"("})";
    lines.push_back(line);
    prev = sha256_hex(line);
  }
  std::ofstream out(folder + "/ledger.jsonl");
  for (const auto& line : lines) out << line << '\n';
  char seq[32];
  std::snprintf(seq, sizeof seq, "%020d ", 3);
  const std::string record = std::string(seq) + prev;
  std::ofstream(folder + "/ledger.head") << record << ' ' << sha256_hex(record).substr(0, 16) << '\n';
  return lines;
}

TEST_F(ServeE2eTest, ApprovalsAndTheLedgerAsAPersonSeesThem) {
  ServeDaemon daemon({{"one", R"({"text": "hi"})"
                              "\n"}});
  start(daemon);

  const DeskctlResult none = daemon.deskctl({"approvals"});
  EXPECT_EQ(none.exit_code, 0) << none.error_output;
  EXPECT_EQ(none.output, "No API calls wait for approval.\n");
  const DeskctlResult unknown = daemon.deskctl({"approve", "ap-000000000000"});
  EXPECT_EQ(unknown.exit_code, 1);
  EXPECT_THAT(unknown.error_output, HasSubstr("There is no request ap-000000000000 waiting for approval on desk one."));
  EXPECT_EQ(daemon.deskctl({"deny", "ap-000000000000"}).exit_code, 1);
  const DeskctlResult slash = daemon.deskctl({"ask", "one", "/approvals"});
  EXPECT_EQ(slash.exit_code, 0) << slash.error_output;
  EXPECT_THAT(slash.output, HasSubstr("No API calls wait for approval."));

  const DeskctlResult empty = daemon.deskctl({"ledger", "one", "--verify"});
  EXPECT_EQ(empty.exit_code, 0) << empty.error_output;
  EXPECT_EQ(empty.output, "ledger intact: 0 lines\n");

  const std::string state = daemon.folder() + "/state/desks/one";
  const auto lines = write_ledger(state);
  const DeskctlResult shown = daemon.deskctl({"ledger", "one", "--verify"});
  EXPECT_EQ(shown.exit_code, 0) << shown.error_output;
  EXPECT_EQ(shown.output, lines[0] + "\n" + lines[1] + "\n" + lines[2] + "\nledger intact: 3 lines\n");
  const DeskctlResult since = daemon.deskctl({"ledger", "one", "--since", "2026-12-01T09:32:00+05:30"});
  EXPECT_EQ(since.output, lines[1] + "\n" + lines[2] + "\n");
  const DeskctlResult bad_since = daemon.deskctl({"ledger", "one", "--since", "yesterday"});
  EXPECT_EQ(bad_since.exit_code, 1);
  EXPECT_THAT(bad_since.error_output, HasSubstr("'yesterday' is not a time"));

  std::string edited = lines[1];
  edited.replace(edited.find("answered"), 8, "refused!");
  std::ofstream(state + "/ledger.jsonl") << lines[0] << '\n' << edited << '\n' << lines[2] << '\n';
  const DeskctlResult broken = daemon.deskctl({"ledger", "one", "--verify"});
  EXPECT_EQ(broken.exit_code, 1);
  EXPECT_THAT(broken.output, HasSubstr("ledger NOT intact: ledger.jsonl:3: prev does not match the hash of the line "
                                       "before it (ledger.jsonl:2)"));
  EXPECT_EQ(daemon.deskctl({"ledger", "nobody"}).exit_code, 1);
}

}  // namespace
}  // namespace deskd::e2e
