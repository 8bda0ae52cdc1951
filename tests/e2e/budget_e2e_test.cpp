// Spend caps end to end: deskd serve with the `openai` provider on a fake Chat Completions
// server on loopback (the real wire format, usage reported as the API reports it), driven by
// deskctl. A desk at its daily cap makes no further request; deskctl budget --add lets the
// next turn run; four subagents started at once cannot together pass the cap; and the cap
// resets with the India day (a usage file dated yesterday counts for nothing; the reset at
// midnight itself is the budget keeper's unit test, under a ManualClock, as deskd has no
// clock a test can move).

#include <gtest/gtest.h>

#include <boost/json.hpp>

#include <chrono>
#include <cstdio>
#include <fstream>

#include "e2e/daemon_fixture.h"
#include "unit/model/fake_http_server.h"

namespace deskd::e2e {
namespace {

namespace json = boost::json;
using model::testing::FakeHttpServer;
using model::testing::FakeResponse;

constexpr const char* kBudgetKey = "sk-budget-e2e";

std::string budget_chunk(const json::object& body) { return "data: " + json::serialize(body) + "\n\n"; }

json::object budget_delta(json::object content, json::value finish_reason = nullptr) {
  return {{"id", "c1"},
          {"object", "chat.completion.chunk"},
          {"model", "gpt-test"},
          {"choices",
           json::array{json::object{{"index", 0}, {"delta", std::move(content)}, {"finish_reason", finish_reason}}}}};
}

std::string budget_usage(int prompt, int completion) {
  return budget_chunk({{"id", "c1"},
                       {"object", "chat.completion.chunk"},
                       {"model", "gpt-test"},
                       {"choices", json::array{}},
                       {"usage", json::object{{"prompt_tokens", prompt},
                                              {"completion_tokens", completion},
                                              {"total_tokens", prompt + completion}}}});
}

// A whole text reply that reports `prompt` and `completion` tokens.
std::string priced_reply(const std::string& text, int prompt, int completion) {
  return budget_chunk(budget_delta({{"role", "assistant"}, {"content", text}})) +
         budget_chunk(budget_delta(json::object{}, "stop")) + budget_usage(prompt, completion) + "data: [DONE]\n\n";
}

// $1 a million tokens in and out, and max_tokens 100,000: every call's worst case is a
// little over $0.10 (its input, as estimated, plus $0.10 of output).
std::string priced_model(const FakeHttpServer& server) {
  return "provider = \"openai\"\nmodel = \"gpt-test\"\nbase_url = \"" + server.url("/v1") +
         "\"\napi_key_variable = \"DESKD_E2E_KEY\"\nmax_retries = 0\nmax_tokens = 100000\n";
}

std::string budget_tables(const std::string& budget) {
  return "[desk.model.prices.\"gpt-test\"]\ninput = 1.0\noutput = 1.0\n[desk.budget]\n" + budget;
}

std::vector<std::string> budget_environment() { return {std::string("DESKD_E2E_KEY=") + kBudgetKey}; }

// The India date `days` from today, as YYYY-MM-DD.
std::string india_day(int days) {
  const auto india_now = std::chrono::system_clock::now() + std::chrono::minutes(5 * 60 + 30);
  const std::chrono::year_month_day date{std::chrono::floor<std::chrono::days>(india_now) + std::chrono::days(days)};
  char text[16];
  std::snprintf(text, sizeof text, "%04d-%02u-%02u", static_cast<int>(date.year()), static_cast<unsigned>(date.month()),
                static_cast<unsigned>(date.day()));
  return text;
}

// A usage file of `date` in which gpt-test used ten million input tokens ($10 at $1/M).
void write_spent_usage(const ServeDaemon& daemon, const std::string& date) {
  const json::object day{{"version", 1},
                         {"date", date},
                         {"models", json::object{{"gpt-test", json::object{{"requests", 3},
                                                                           {"input_tokens", 10'000'000},
                                                                           {"output_tokens", 0},
                                                                           {"cache_read_tokens", 0},
                                                                           {"cache_write_tokens", 0},
                                                                           {"unreported_requests", 0}}}}}};
  std::ofstream(daemon.folder() + "/state/desks/alpha/usage.json") << json::serialize(day) << "\n";
}

TEST(BudgetE2eTest, ADeskAtItsDailyCapMakesNoFurtherRequestUntilDeskctlBudgetAddRaisesIt) {
  FakeHttpServer server;
  // The first turn spends $0.10 (99,000 tokens out): what is left of $0.15 holds no call.
  server.enqueue(FakeResponse::event_stream({{priced_reply("First answer.", 1'000, 99'000)}}));
  ServeDaemon daemon({DeskSetup{
      .name = "alpha", .script = "", .tables = budget_tables("daily_usd = 0.15\n"), .model = priced_model(server)}});
  std::string why;
  ASSERT_TRUE(daemon.start(budget_environment(), &why)) << why;

  const DeskctlResult first = daemon.deskctl({"ask", "alpha", "What is the plan?"});
  EXPECT_EQ(first.exit_code, 0) << first.output << first.error_output;
  EXPECT_NE(first.output.find("First answer."), std::string::npos) << first.output;
  ASSERT_EQ(server.requests().size(), 1u);
  // The model is told what is left, in the line that opens its message.
  EXPECT_NE(server.requests()[0].body.find("budget: $0.15 of $0.15 left today"), std::string::npos);

  const DeskctlResult second = daemon.deskctl({"ask", "alpha", "And now?"});
  EXPECT_EQ(second.exit_code, 1) << second.output;
  EXPECT_NE(second.output.find("budget reached: the desk's daily budget of $0.15 is reached"), std::string::npos)
      << second.output;
  EXPECT_EQ(server.requests().size(), 1u) << "no request is made at the cap";

  const DeskctlResult budget = daemon.deskctl({"budget", "alpha"});
  EXPECT_EQ(budget.exit_code, 0) << budget.error_output;
  EXPECT_NE(budget.output.find("daily_usd:    cap $0.15, spent $0.10, reserved $0.00, left $0.05"), std::string::npos)
      << budget.output;
  const DeskctlResult usage = daemon.deskctl({"ask", "alpha", "/usage"});
  EXPECT_NE(usage.output.find("daily_usd: cap $0.15; spent $0.10, reserved $0.00, left $0.05"), std::string::npos)
      << usage.output;

  const DeskctlResult raised = daemon.deskctl({"budget", "alpha", "--add", "1"});
  EXPECT_EQ(raised.exit_code, 0) << raised.error_output;
  EXPECT_NE(raised.output.find("cap $1.15 ($1.00 added today)"), std::string::npos) << raised.output;
  server.enqueue(FakeResponse::event_stream({{priced_reply("Second answer.", 1'000, 10)}}));
  const DeskctlResult third = daemon.deskctl({"ask", "alpha", "Go on."});
  EXPECT_EQ(third.exit_code, 0) << third.output << third.error_output;
  EXPECT_NE(third.output.find("Second answer."), std::string::npos) << third.output;
  ASSERT_EQ(server.requests().size(), 2u);
  EXPECT_NE(server.requests()[1].body.find("of $1.15 left today"), std::string::npos);
  EXPECT_NE(file_text(daemon.journal_path("alpha")).find("BUDGET_REACHED"), std::string::npos);
}

TEST(BudgetE2eTest, FourSubagentsStartedAtOnceCannotTogetherPassTheCap) {
  FakeHttpServer server;
  // The desk's model starts four subagents in one reply.
  std::string calls = budget_chunk(budget_delta({{"role", "assistant"}, {"content", "Four helpers."}}));
  for (int index = 0; index < 4; ++index) {
    const json::object call{
        {"index", index},
        {"id", "call_" + std::to_string(index)},
        {"type", "function"},
        {"function",
         json::object{{"name", "start_subagent"},
                      {"arguments", json::serialize(json::object{{"task", "Count to " + std::to_string(index)}})}}}};
    calls += budget_chunk(budget_delta({{"tool_calls", json::array{call}}}));
  }
  calls += budget_chunk(budget_delta(json::object{}, "tool_calls")) + budget_usage(1'000, 100) + "data: [DONE]\n\n";
  server.enqueue(FakeResponse::event_stream({{calls}}));
  // Each subagent that is let through spends its whole worst case (99,000 tokens out, about
  // $0.10), slowly, so that all four reserve before any has settled.
  for (int index = 0; index < 4; ++index) {
    server.enqueue(
        FakeResponse::event_stream({{"", std::chrono::milliseconds(1500)}, {priced_reply("Counted.", 1'000, 99'000)}}));
  }
  ServeDaemon daemon({DeskSetup{
      .name = "alpha", .script = "", .tables = budget_tables("daily_usd = 0.35\n"), .model = priced_model(server)}});
  std::string why;
  ASSERT_TRUE(daemon.start(budget_environment(), &why)) << why;

  const DeskctlResult asked = daemon.deskctl({"ask", "alpha", "Count with four helpers."}, std::chrono::seconds(60));
  // $0.35 holds three subagents' worst cases: the fourth is refused before its request, and
  // then the desk's own next call no longer fits either.
  EXPECT_EQ(asked.exit_code, 1) << asked.output << asked.error_output;
  EXPECT_NE(asked.output.find("budget reached"), std::string::npos) << asked.output;
  const auto requests = server.requests();
  EXPECT_EQ(requests.size(), 4u) << "one desk call and three subagent calls";
  const std::string journal = file_text(daemon.journal_path("alpha"));
  EXPECT_NE(journal.find("the desk's daily budget of $0.35 is reached"), std::string::npos)
      << "the refused subagent ended with an error naming the cap";

  const DeskctlResult budget = daemon.deskctl({"--json", "budget", "alpha"});
  ASSERT_EQ(budget.exit_code, 0) << budget.error_output;
  const json::object reply = json::parse(budget.output).as_object();
  const double spent = reply.at("budget").at("spent_usd").to_number<double>();
  EXPECT_LE(spent, 0.35) << "the cap was overshot";
  EXPECT_GT(spent, 0.29) << "three subagents' calls are counted";
  EXPECT_EQ(reply.at("budget").at("reserved_usd").to_number<double>(), 0.0);

  // Raised, the desk goes on from its session: its model reads the refused subagent's error
  // among the tool results.
  ASSERT_EQ(daemon.deskctl({"budget", "alpha", "--add", "1"}).exit_code, 0);
  server.enqueue(FakeResponse::event_stream({{priced_reply("Three counted, one refused.", 1'000, 10)}}));
  const DeskctlResult next = daemon.deskctl({"ask", "alpha", "Go on."});
  EXPECT_EQ(next.exit_code, 0) << next.output << next.error_output;
  ASSERT_EQ(server.requests().size(), 5u);
  EXPECT_NE(server.requests()[4].body.find("failed: the desk's daily budget of $0.35 is reached"), std::string::npos)
      << server.requests()[4].body;
}

TEST(BudgetE2eTest, SpendingCountsForItsIndiaDayOnly) {
  FakeHttpServer server;
  ServeDaemon daemon({DeskSetup{
      .name = "alpha", .script = "", .tables = budget_tables("daily_usd = 1\n"), .model = priced_model(server)}});
  std::string why;
  ASSERT_TRUE(daemon.start(budget_environment(), &why)) << why;
  ASSERT_EQ(daemon.stop(), 0);

  // $10 spent today: every trigger is answered with the cap, and no request is made.
  write_spent_usage(daemon, india_day(0));
  ASSERT_TRUE(daemon.start(budget_environment(), &why)) << why;
  const DeskctlResult capped = daemon.deskctl({"ask", "alpha", "Anything?"});
  EXPECT_EQ(capped.exit_code, 1) << capped.output;
  EXPECT_NE(capped.output.find("budget reached: the desk's daily budget of $1.00 is reached: $10.00 spent"),
            std::string::npos)
      << capped.output;
  EXPECT_NE(capped.output.find("it resets at " + india_day(1) + " 00:00 India time"), std::string::npos)
      << capped.output;
  EXPECT_TRUE(server.requests().empty());
  ASSERT_EQ(daemon.stop(), 0);

  // The same $10 spent yesterday: today starts with all of it left.
  write_spent_usage(daemon, india_day(-1));
  server.enqueue(FakeResponse::event_stream({{priced_reply("A new day.", 1'000, 10)}}));
  ASSERT_TRUE(daemon.start(budget_environment(), &why)) << why;
  const DeskctlResult fresh = daemon.deskctl({"ask", "alpha", "Anything?"});
  EXPECT_EQ(fresh.exit_code, 0) << fresh.output << fresh.error_output;
  EXPECT_NE(fresh.output.find("A new day."), std::string::npos) << fresh.output;
  EXPECT_EQ(server.requests().size(), 1u);

  // Yesterday stays in the desk's spend by day, beside today (the web page's charts).
  const DeskctlResult spend = daemon.deskctl({"spend", "alpha"});
  EXPECT_EQ(spend.exit_code, 0) << spend.error_output;
  const std::size_t yesterday = spend.output.find("  " + india_day(-1) + "  ");
  const std::size_t today = spend.output.find("  " + india_day(0) + "  1 requests  1010 tokens");
  ASSERT_NE(yesterday, std::string::npos) << spend.output;
  ASSERT_NE(today, std::string::npos) << spend.output;
  EXPECT_LT(yesterday, today) << spend.output;
  EXPECT_NE(spend.output.find("$10.00"), std::string::npos) << spend.output;
  const DeskctlResult every = daemon.deskctl({"--json", "spend"});
  EXPECT_NE(every.output.find("\"date\":\"" + india_day(-1) + "\""), std::string::npos) << every.output;
}

}  // namespace
}  // namespace deskd::e2e
