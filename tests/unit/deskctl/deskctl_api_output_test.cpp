// How deskctl prints the API gate's replies: the waiting calls as a table, a decision, and
// a ledger with its verdict — with what a desk wrote escaped, never obeyed by the terminal.

#include <gtest/gtest.h>

#include <boost/json.hpp>

#include "runner/deskctl/deskctl_output.h"

namespace deskd::control::deskctl {
namespace {

namespace json = boost::json;

std::string printed(int (*print)(const json::object&), const json::object& reply, int expected_status = kOk) {
  ::testing::internal::CaptureStdout();
  const int status = print(reply);
  std::string out = ::testing::internal::GetCapturedStdout();
  EXPECT_EQ(status, expected_status);
  return out;
}

TEST(DeskctlApiOutput, WaitingCallsAreATableWithTheDesksTextEscaped) {
  const json::object reply{
      {"ok", true},
      {"approvals", json::array{json::object{{"id", "ap-0123456789ab"},
                                             {"desk", "nifty"},
                                             {"api", "kite"},
                                             {"method", "POST"},
                                             {"url", "https://api.kite.trade/orders/regular?x=\x1b]0;owned\x07"},
                                             {"summary", "quantity=10\n\x1b[2Kprice=1"},
                                             {"sha256", "abc"},
                                             {"rule", "orders"},
                                             {"expires_in_seconds", 41}}}}};
  const std::string out = printed(print_approvals_reply, reply);
  EXPECT_EQ(out,
            "ID               DESK             API        EXPIRES IN CALL\n"
            "ap-0123456789ab  nifty            kite       41 s       POST "
            "https://api.kite.trade/orders/regular?x=\\e]0;owned\\x07\n"
            "  quantity=10\\n\\e[2Kprice=1\n"
            "  sha256 abc (rule orders)\n");
  EXPECT_EQ(out.find('\x1b'), std::string::npos);
  EXPECT_EQ(printed(print_approvals_reply, json::object{{"approvals", json::array{}}}),
            "No API calls wait for approval.\n");
}

TEST(DeskctlApiOutput, ADecisionSaysWhatWasDecided) {
  const json::object reply{{"approval", json::object{{"id", "ap-0123456789ab"},
                                                     {"desk", "nifty"},
                                                     {"method", "POST"},
                                                     {"url", "https://api.kite.trade/orders/regular"},
                                                     {"decision", "approved"},
                                                     {"by", "uid 1000 (ravi)"}}}};
  EXPECT_EQ(printed(print_approval_decision_reply, reply),
            "Request ap-0123456789ab of desk nifty approved: POST https://api.kite.trade/orders/regular\n");
}

TEST(DeskctlApiOutput, TheLedgerAndItsVerdict) {
  const json::array lines{R"({"seq":1,"path":"/q?\u001b[2J"})", "\x1b[2Jforged"};
  EXPECT_EQ(printed(print_ledger_reply, json::object{{"ledger", json::object{{"lines", lines}}}}),
            "{\"seq\":1,\"path\":\"/q?\\u001b[2J\"}\n\\e[2Jforged\n");
  EXPECT_EQ(printed(print_ledger_reply,
                    json::object{{"ledger",
                                  json::object{{"lines", json::array{}}, {"verified", true}, {"verified_lines", 17}}}}),
            "ledger intact: 17 lines\n");
  EXPECT_EQ(
      printed(print_ledger_reply,
              json::object{{"ledger", json::object{{"lines", json::array{}},
                                                   {"verified", false},
                                                   {"verified_lines", 3},
                                                   {"problem", "ledger.jsonl:2: seq is 3 where 2 was expected"}}}},
              kRefused),
      "ledger NOT intact: ledger.jsonl:2: seq is 3 where 2 was expected\n");
}

TEST(DeskctlApiOutput, TheBudgetsCapsSpentReservedAndLeft) {
  const json::object budget{{"daily_usd", 6.0},       {"added_usd", 1.0},     {"spent_usd", 3.8},
                            {"reserved_usd", 0.21},   {"left_usd", 1.99},     {"spent_tokens", 420000},
                            {"reserved_tokens", 0},   {"per_turn_usd", 0.5},  {"resets", "2026-12-01 00:00 India time"}};
  EXPECT_EQ(printed(print_budget_reply, json::object{{"budget", budget}}),
            "daily_usd:    cap $6.00 ($1.00 added today), spent $3.80, reserved $0.21, left $1.99\n"
            "per_turn_usd: $0.50 a turn\n"
            "resets:       2026-12-01 00:00 India time\n");
  EXPECT_EQ(printed(print_budget_reply,
                    json::object{{"budget", json::object{{"spent_usd", 0.0},
                                                         {"spent_tokens", 0},
                                                         {"reserved_usd", 0.0},
                                                         {"resets", "2026-12-01 00:00 India time"}}}}),
            "No spend caps; spent today $0.00 (0 tokens), reserved $0.00.\n");
}

}  // namespace
}  // namespace deskd::control::deskctl
