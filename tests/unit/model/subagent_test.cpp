// Subagents without a daemon: the script's subagent lines are found by task and kept out
// of the desk's own turns; the board holds the desk's limit and its recent subagents; a
// tool round runs the calls that may run beside each other at once, the others in order;
// start_subagent runs a separate turn and hands back its answer.

#include <boost/asio.hpp>
#include <boost/json.hpp>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "base/clock.h"
#include "runner/desk/subagent_board.h"
#include "runner/model/script_provider.h"
#include "runner/model/subagent_tool.h"
#include "runner/model/tool_round.h"
#include "runner/tools/tool_registry.h"
#include "tests/unit/model/run_awaitable.h"

namespace deskd::model {
namespace {

namespace asio = boost::asio;
namespace json = boost::json;
using ::testing::HasSubstr;

ModelRequest turn_request(const std::string& text) {
  ModelRequest request;
  request.messages.push_back(
      json::object{{"role", "user"}, {"content", json::array{json::object{{"type", "text"}, {"text", text}}}}});
  return request;
}

TEST(ScriptSubagentTest, SubagentLinesAreFoundByTaskAndAreNoDeskTurns) {
  auto script = ScriptProvider::parse(R"({"subagent": "beta", "text": "beta says hi"})"
                                      "\n"
                                      R"({"text": "the desk's turn"})"
                                      "\n"
                                      R"({"subagent": "*", "text": "anyone"})"
                                      "\n");
  ASSERT_TRUE(script.ok()) << script.error().what;
  asio::io_context context;
  EXPECT_EQ(wait(context, script->complete(turn_request("go"))).text, "the desk's turn");
  EXPECT_EQ(wait(context, script->for_subagent("beta")->complete(turn_request("beta"))).text, "beta says hi");
  EXPECT_EQ(wait(context, script->for_subagent("gamma")->complete(turn_request("gamma"))).text, "anyone");
  EXPECT_THAT(wait(context, script->for_subagent("beta")->complete(turn_request("beta"))).text, HasSubstr("no line"));
  EXPECT_FALSE(ScriptProvider::parse(R"({"subagent": 3, "text": "x"})").ok());
}

TEST(SubagentBoardTest, HoldsTheLimitAndKeepsRecentOnes) {
  desk::SubagentBoard board(2);
  const auto now = std::chrono::system_clock::now();
  auto first = board.start("one", now);
  auto second = board.start("two", now);
  ASSERT_TRUE(first.ok() && second.ok());
  EXPECT_NE(*first, *second);
  auto third = board.start("three", now);
  ASSERT_FALSE(third.ok());
  EXPECT_THAT(third.error().what, HasSubstr("2 subagents already run"));
  board.update(*first, 3, 1200);
  board.end(*first, "finished");
  EXPECT_EQ(board.running(), 1u);
  const auto listed = board.list();
  ASSERT_EQ(listed.size(), 2u);
  EXPECT_EQ(listed[0].task, "two");
  EXPECT_EQ(listed[1].state, "finished");
  EXPECT_EQ(listed[1].tokens, 1200u);
  EXPECT_THAT(board.describe(now), HasSubstr(*first + "  finished  3 turns  1200 tokens  one"));
  for (int index = 0; index < 30; ++index) board.end(*board.start("more", now), "failed");
  EXPECT_EQ(board.list().size(), 1u + desk::SubagentBoard::kRecentKept);
  EXPECT_FALSE(desk::SubagentBoard(0).start("none", now).ok());
}

// A tool that waits for a partner: two calls meet only when they run at once.
class MeetingTool final : public tools::Tool {
 public:
  explicit MeetingTool(bool beside) : beside_(beside) {}
  std::string_view name() const override { return beside_ ? "meet" : "alone"; }
  std::string_view description() const override { return "Meets."; }
  std::string_view input_schema() const override { return R"({"type":"object"})"; }
  bool runs_beside_others() const override { return beside_; }
  asio::awaitable<tools::ToolResult> call(const json::object&) override {
    ++arrived;
    asio::steady_timer timer(co_await asio::this_coro::executor);  // one per call: calls may overlap
    for (int tick = 0; tick < 50 && arrived < 2; ++tick) {
      timer.expires_after(std::chrono::milliseconds(2));
      co_await timer.async_wait(asio::use_awaitable);
    }
    co_return tools::ToolResult::success(arrived >= 2 ? "met" : "alone");
  }
  int arrived = 0;

 private:
  bool beside_;
};

TEST(ToolRoundTest, CallsThatMayRunBesideEachOtherRunAtOnce) {
  asio::io_context context;
  auto registry = std::make_shared<tools::ToolRegistry>();
  registry->add(std::make_unique<MeetingTool>(true));
  const std::vector<ToolCall> calls{{"c1", "meet", {}}, {"c2", "meet", {}}};
  std::vector<std::size_t> started, finished;
  const ToolRoundWatch watch{[&](std::size_t index) { started.push_back(index); },
                             [&](std::size_t index, const tools::ToolResult&) { finished.push_back(index); }};
  const auto results = wait(context, run_tool_round(registry, calls, watch));
  ASSERT_EQ(results.size(), 2u);
  EXPECT_EQ(results[0].text, "met");
  EXPECT_EQ(results[1].text, "met");
  EXPECT_EQ(started, (std::vector<std::size_t>{0, 1}));
  EXPECT_EQ(finished, (std::vector<std::size_t>{0, 1}));
}

TEST(ToolRoundTest, OtherCallsRunOneAfterAnother) {
  asio::io_context context;
  auto registry = std::make_shared<tools::ToolRegistry>();
  registry->add(std::make_unique<MeetingTool>(false));
  const std::vector<ToolCall> calls{{"c1", "alone", {}}, {"c2", "alone", {}}};
  const auto results = wait(context, run_tool_round(registry, calls, {}));
  EXPECT_EQ(results[0].text, "alone");
}

TEST(StartSubagentTest, RunsASeparateTurnAndReturnsItsAnswer) {
  asio::io_context context;
  auto script =
      std::make_shared<ScriptProvider>(ScriptProvider::parse(R"({"subagent": "add two and two", "text": "four"})"
                                                             "\n")
                                           .value());
  auto board = std::make_shared<desk::SubagentBoard>(1);
  std::vector<std::string> kinds;
  board->attach(
      [&](const char* kind, json::object data) {
        kinds.push_back(std::string(kind) + " " + std::string(data.at("subagent").as_string()).substr(0, 3));
      },
      nullptr);
  SystemClock clock;
  StartSubagentTool tool(
      board,
      [&](const std::string& task) -> Result<std::shared_ptr<ModelProvider>> {
        return std::shared_ptr<ModelProvider>(script->for_subagent(task));
      },
      [](const std::vector<std::string>& names) -> Result<std::shared_ptr<tools::ToolRegistry>> {
        auto registry = std::make_shared<tools::ToolRegistry>();
        if (!names.empty()) DESKD_RETURN_IF_ERROR(registry->keep_only(names));
        return registry;
      },
      nullptr, nullptr, clock, SubagentSettings{});
  EXPECT_TRUE(tool.runs_beside_others());
  const auto answered = wait(context, tool.call(json::object{{"task", "add two and two"}}));
  EXPECT_FALSE(answered.is_error) << answered.text;
  EXPECT_THAT(answered.text, HasSubstr("four"));
  EXPECT_THAT(kinds, ::testing::ElementsAre("SUBAGENT_STARTED sa-", "MODEL_TEXT sa-", "SUBAGENT_FINISHED sa-"));
  EXPECT_EQ(board->list().front().state, "finished");

  EXPECT_TRUE(wait(context, tool.call(json::object{{"task", ""}})).is_error);
  EXPECT_THAT(wait(context, tool.call(json::object{{"task", "x"}, {"tools", json::array{"start_subagent"}}})).text,
              HasSubstr("may not start subagents"));
  EXPECT_THAT(wait(context, tool.call(json::object{{"task", "x"}, {"tools", json::array{"no_such_tool"}}})).text,
              HasSubstr("There is no tool called 'no_such_tool'"));
}

}  // namespace
}  // namespace deskd::model
