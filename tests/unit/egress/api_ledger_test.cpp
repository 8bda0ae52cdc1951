// The API ledger on real files: its hash chain across appends, reopening and rotation, what
// verifying finds when a line is edited, removed or moved, a torn tail repaired, and reading
// by time and size.

#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <boost/json.hpp>

#include <fstream>
#include <sstream>

#include "runner/egress/api_ledger.h"
#include "runner/events/india_time.h"

namespace deskd::egress {
namespace {

namespace json = boost::json;
using namespace std::chrono_literals;

class ApiLedgerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/deskd-ledger-XXXXXX";
    ASSERT_NE(::mkdtemp(pattern), nullptr);
    folder_ = pattern;
  }
  void TearDown() override { std::filesystem::remove_all(folder_); }

  static LedgerEntry entry(int number) {
    LedgerEntry line;
    line.api = "kite";
    line.method = "POST";
    line.origin = "https://api.kite.trade";
    line.path = "/orders/regular?n=" + std::to_string(number);
    line.rule = "orders";
    line.outcome = "allowed";
    line.status = 200;
    line.request_bytes = 120;
    line.response_bytes = 40;
    line.request_sha256 = std::string(64, 'a');
    line.response_sha256 = std::string(64, 'b');
    return line;
  }

  void write_lines(int count, std::uint64_t rotate_bytes = kLedgerRotateBytes) {
    auto ledger = ApiLedger::open(folder_, clock_, rotate_bytes);
    ASSERT_TRUE(ledger.ok()) << ledger.error().what;
    for (int number = 1; number <= count; ++number) {
      ASSERT_TRUE((*ledger)->append(entry(number)).ok());
      clock_.advance(1s);
    }
  }

  std::vector<std::string> lines_of(const std::string& name) const {
    std::ifstream in(folder_ / name);
    std::vector<std::string> lines;
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    return lines;
  }

  void rewrite(const std::string& name, const std::vector<std::string>& lines) const {
    std::ofstream out(folder_ / name, std::ios::trunc);
    for (const auto& line : lines) out << line << '\n';
  }

  LedgerCheck verified() const {
    auto check = verify_ledger(folder_);
    EXPECT_TRUE(check.ok()) << check.error().what;
    return check.ok() ? *check : LedgerCheck{};
  }

  std::filesystem::path folder_;
  ManualClock clock_{std::chrono::sys_days{std::chrono::year{2026} / 12 / 1} + 4h};  // 09:30 IST
};

TEST_F(ApiLedgerTest, LinesCarryTheirKeysInOrderAndChainAcrossAReopen) {
  write_lines(3);
  write_lines(2);
  const auto lines = lines_of("ledger.jsonl");
  ASSERT_EQ(lines.size(), 5u);
  EXPECT_TRUE(lines[0].starts_with(R"({"seq":1,"at":"2026-12-01T09:30:00.000+05:30","api":"kite","method":"POST",)"))
      << lines[0];
  const json::object first = json::parse(lines[0]).as_object();
  std::vector<std::string> keys;
  for (const auto& member : first) keys.emplace_back(member.key());
  EXPECT_EQ(keys, (std::vector<std::string>{"seq", "at", "api", "method", "origin", "path", "rule", "outcome", "status",
                                            "request_bytes", "response_bytes", "request_sha256", "response_sha256",
                                            "reason", "approval", "prev"}));
  EXPECT_EQ(first.at("prev").as_string(), std::string(64, '0'));
  EXPECT_EQ(json::parse(lines[4]).at("seq").as_int64(), 5) << "seq continues after reopening";
  const LedgerCheck check = verified();
  EXPECT_TRUE(check.intact) << check.problem;
  EXPECT_EQ(check.lines, 5u);
  struct stat status {};
  ASSERT_EQ(::stat((folder_ / "ledger.jsonl").c_str(), &status), 0);
  EXPECT_EQ(status.st_mode & 0777, 0600u);
}

TEST_F(ApiLedgerTest, VerifyFindsAnEditedMiddleLine) {
  write_lines(5);
  auto lines = lines_of("ledger.jsonl");
  lines[2].replace(lines[2].find("allowed"), 7, "denied!");
  rewrite("ledger.jsonl", lines);
  const LedgerCheck check = verified();
  EXPECT_FALSE(check.intact);
  EXPECT_EQ(check.problem,
            "ledger.jsonl:4: prev does not match the hash of the line before it (ledger.jsonl:3) — a line was edited, "
            "removed or moved");
}

TEST_F(ApiLedgerTest, VerifyFindsAnEditedLastLine) {
  write_lines(4);
  auto lines = lines_of("ledger.jsonl");
  lines[3].replace(lines[3].find("allowed"), 7, "refused");
  rewrite("ledger.jsonl", lines);
  const LedgerCheck check = verified();
  EXPECT_FALSE(check.intact);
  EXPECT_TRUE(check.problem.starts_with("ledger.jsonl:4: the last line does not match")) << check.problem;
}

TEST_F(ApiLedgerTest, VerifyFindsARemovedMiddleLine) {
  write_lines(5);
  auto lines = lines_of("ledger.jsonl");
  lines.erase(lines.begin() + 1);
  rewrite("ledger.jsonl", lines);
  const LedgerCheck check = verified();
  EXPECT_FALSE(check.intact);
  EXPECT_TRUE(check.problem.starts_with("ledger.jsonl:2: seq is 3 where 2 was expected")) << check.problem;
}

TEST_F(ApiLedgerTest, VerifyFindsARemovedLastLine) {
  write_lines(5);
  auto lines = lines_of("ledger.jsonl");
  lines.pop_back();
  rewrite("ledger.jsonl", lines);
  const LedgerCheck check = verified();
  EXPECT_FALSE(check.intact);
  EXPECT_TRUE(check.problem.starts_with("ledger.head: names line 5, but the ledger ends at line 4")) << check.problem;
}

TEST_F(ApiLedgerTest, VerifyFindsTwoSwappedLines) {
  write_lines(5);
  auto lines = lines_of("ledger.jsonl");
  std::swap(lines[1], lines[2]);
  rewrite("ledger.jsonl", lines);
  const LedgerCheck check = verified();
  EXPECT_FALSE(check.intact);
  EXPECT_TRUE(check.problem.starts_with("ledger.jsonl:2: seq is 3 where 2 was expected")) << check.problem;
}

TEST_F(ApiLedgerTest, RotationKeepsTheChainAcrossFiles) {
  const std::uint64_t about_three_lines = 3 * 420;
  write_lines(10, about_three_lines);
  std::vector<std::string> rotated;
  for (const auto& file : std::filesystem::directory_iterator(folder_)) {
    const std::string name = file.path().filename();
    if (name.starts_with("ledger-")) rotated.push_back(name);
  }
  ASSERT_GE(rotated.size(), 2u);
  EXPECT_TRUE(std::filesystem::exists(folder_ / "ledger-000000000001.jsonl"));
  LedgerCheck check = verified();
  EXPECT_TRUE(check.intact) << check.problem;
  EXPECT_EQ(check.lines, 10u);
  // deskd stopped between renaming the full file and making the next: the chain goes on
  // from the newest rotated file.
  const std::string first_of_current = lines_of("ledger.jsonl").front();
  const auto first_seq = json::parse(first_of_current).at("seq").as_int64();
  char rotated_name[64];
  std::snprintf(rotated_name, sizeof rotated_name, "ledger-%012lld.jsonl", static_cast<long long>(first_seq));
  std::filesystem::rename(folder_ / "ledger.jsonl", folder_ / rotated_name);
  write_lines(1, about_three_lines);
  check = verified();
  EXPECT_TRUE(check.intact) << check.problem;
  EXPECT_EQ(check.lines, 11u);
  // An edit inside a rotated file is seen at the line after it.
  std::filesystem::remove_all(folder_);
  std::filesystem::create_directory(folder_);
  write_lines(10, about_three_lines);
  auto first_file = lines_of("ledger-000000000001.jsonl");
  first_file[0].replace(first_file[0].find("POST"), 4, "GET!");
  rewrite("ledger-000000000001.jsonl", first_file);
  check = verified();
  EXPECT_FALSE(check.intact);
  EXPECT_TRUE(check.problem.starts_with("ledger-000000000001.jsonl:2: prev does not match")) << check.problem;
}

TEST_F(ApiLedgerTest, ATornTailIsCutOffAndTheChainGoesOn) {
  write_lines(3);
  {
    std::ofstream out(folder_ / "ledger.jsonl", std::ios::app);
    out << R"({"seq":4,"at":"2026-12-01T09:30:03.000+05:30","api":"ki)";
  }
  auto ledger = ApiLedger::open(folder_, clock_);
  ASSERT_TRUE(ledger.ok()) << ledger.error().what;
  EXPECT_TRUE((*ledger)->repaired().starts_with("ledger.jsonl ended in a torn line of ")) << (*ledger)->repaired();
  ASSERT_TRUE((*ledger)->append(entry(4)).ok());
  ledger->reset();
  const LedgerCheck check = verified();
  EXPECT_TRUE(check.intact) << check.problem;
  EXPECT_EQ(check.lines, 4u);
}

// A deskd killed after writing a line but before its head (append writes them in turn).
TEST_F(ApiLedgerTest, AHeadOneLineBehindIsMovedOnWhenTheLedgerOpensAgain) {
  write_lines(2);
  const std::string head_at_two = lines_of("ledger.head").at(0);
  write_lines(1);  // line 3
  rewrite("ledger.head", {head_at_two});
  LedgerCheck check = verified();
  EXPECT_FALSE(check.intact);
  EXPECT_TRUE(check.problem.starts_with("ledger.head: names line 2, but the ledger goes on to line 3 — lines were "
                                        "added after it, or deskd stopped between writing a line and its head"))
      << check.problem;

  auto ledger = ApiLedger::open(folder_, clock_);
  ASSERT_TRUE(ledger.ok()) << ledger.error().what;
  EXPECT_EQ((*ledger)->repaired(),
            "ledger.head named line 2 and the ledger ends at line 3 (deskd stopped between writing a line and its "
            "head); the head now names line 3.");
  ledger->reset();
  check = verified();
  EXPECT_TRUE(check.intact) << check.problem;
  EXPECT_EQ(check.lines, 3u);
}

// Two lines past the head is not what a crash leaves: it stays for verifying to report.
TEST_F(ApiLedgerTest, AHeadTwoLinesBehindIsLeftAsItIs) {
  write_lines(1);
  const std::string head_at_one = lines_of("ledger.head").at(0);
  write_lines(2);  // lines 2 and 3
  rewrite("ledger.head", {head_at_one});
  auto ledger = ApiLedger::open(folder_, clock_);
  ASSERT_TRUE(ledger.ok()) << ledger.error().what;
  EXPECT_TRUE((*ledger)->repaired().starts_with("ledger.head named line 1, but the ledger ends at line 3"))
      << (*ledger)->repaired();
  ledger->reset();
  EXPECT_FALSE(verified().intact);
}

TEST_F(ApiLedgerTest, ReadingKeepsTheNewestWithinTheBoundAndSinceATime) {
  write_lines(10);  // 09:30:00 .. 09:30:09 IST
  auto all = read_ledger(folder_, std::nullopt, 1 << 20);
  ASSERT_TRUE(all.ok()) << all.error().what;
  ASSERT_EQ(all->size(), 10u);
  EXPECT_NE(all->back().find("\"seq\":10"), std::string::npos) << "newest last";
  auto since = read_ledger(folder_, desk::india_time_point(desk::IndiaDate{std::chrono::year{2026} / 12 / 1}, 9, 30, 7),
                           1 << 20);
  ASSERT_TRUE(since.ok());
  ASSERT_EQ(since->size(), 3u);
  EXPECT_NE(since->front().find("\"seq\":8"), std::string::npos);
  auto bounded = read_ledger(folder_, std::nullopt, 2 * (all->back().size() + 1) + 10);
  ASSERT_TRUE(bounded.ok());
  ASSERT_EQ(bounded->size(), 2u) << "the newest that fit";
  EXPECT_NE(bounded->front().find("\"seq\":9"), std::string::npos);
}

TEST_F(ApiLedgerTest, NoLineHoldsTheCredential) {
  const std::string secret = "kite-secret-5b3f0e7a";
  auto ledger = ApiLedger::open(folder_, clock_);
  ASSERT_TRUE(ledger.ok());
  LedgerEntry line = entry(1);
  line.path = "/quote?api_key=DESKD_PLACEHOLDER_1234";  // what the desk sent: a placeholder
  line.reason = "refused: \x1b[31m\"quoted\"\n";
  ASSERT_TRUE((*ledger)->append(line).ok());
  ledger->reset();
  std::ifstream in(folder_ / "ledger.jsonl");
  std::stringstream read;
  read << in.rdbuf();
  const std::string text = read.str();
  EXPECT_EQ(text.find(secret), std::string::npos);
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 1) << "a line break in a field is escaped";
  EXPECT_EQ(text.find('\x1b'), std::string::npos) << "control bytes are JSON-escaped";
}

}  // namespace
}  // namespace deskd::egress
