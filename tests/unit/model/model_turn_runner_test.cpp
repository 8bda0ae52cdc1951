// The agent loop on the script provider: tool calls run through the registry in order,
// results and steering go back to the model, the turn ends when the model stops calling.

#include "runner/model/model_turn_runner.h"

#include <boost/asio.hpp>
#include <boost/json.hpp>
#include <filesystem>
#include <fstream>
#include <stdlib.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "runner/desk/session_keeper.h"
#include "runner/desk/usage_tracker.h"
#include "runner/model/script_provider.h"
#include "runner/tools/tool_registry.h"
#include "tests/unit/model/run_awaitable.h"

namespace deskd::model {
namespace {

namespace asio = boost::asio;
namespace json = boost::json;
using ::testing::HasSubstr;

// A tool that echoes its input's "text" and remembers the order of its calls.
class EchoTool final : public tools::Tool {
 public:
  explicit EchoTool(std::vector<std::string>& calls, int* prepares = nullptr) : calls_(calls), prepares_(prepares) {}
  std::string_view name() const override { return "echo"; }
  std::string_view description() const override { return "Echoes text."; }
  std::string_view input_schema() const override {
    return R"({"type":"object","properties":{"text":{"type":"string"}},"required":["text"]})";
  }
  asio::awaitable<tools::ToolResult> call(const json::object& input) override {
    const json::value* text = input.if_contains("text");
    if (text == nullptr || !text->is_string()) co_return tools::ToolResult::failure("echo needs a string 'text'.");
    calls_.emplace_back(text->as_string());
    co_return tools::ToolResult::success(std::string(text->as_string()));
  }
  void prepare() override {
    if (prepares_ != nullptr) ++*prepares_;
  }

 private:
  std::vector<std::string>& calls_;
  int* prepares_;
};

// A tool that waits until its turn is stopped (at most a minute).
class WaitingTool final : public tools::Tool {
 public:
  explicit WaitingTool(bool& started) : started_(started) {}
  std::string_view name() const override { return "wait"; }
  std::string_view description() const override { return "Waits."; }
  std::string_view input_schema() const override { return R"({"type":"object"})"; }
  asio::awaitable<tools::ToolResult> call(const json::object&) override {
    started_ = true;
    asio::steady_timer timer(co_await asio::this_coro::executor, std::chrono::minutes(1));
    co_await timer.async_wait(asio::use_awaitable);
    co_return tools::ToolResult::success("waited");
  }

 private:
  bool& started_;
};

class RecordingContext final : public desk::TurnContext {
 public:
  std::vector<desk::Trigger> take_steering() override { return std::exchange(steering, {}); }
  void publish(const std::string& kind, json::object data) override { events.emplace_back(kind, std::move(data)); }
  void progress() override { ++progress_calls; }
  std::vector<desk::Trigger> steering;
  std::vector<std::pair<std::string, json::object>> events;
  int progress_calls = 0;
};

TEST(ScriptProviderTest, ErrorsNameTheLine) {
  auto script = ScriptProvider::parse("{\"text\": \"fine\"}\nnot json\n", "demo.jsonl");
  ASSERT_FALSE(script.ok());
  EXPECT_THAT(script.error().what, HasSubstr("demo.jsonl:2:"));
  auto nameless = ScriptProvider::parse("{\"tool_calls\": [{\"input\": {}}]}\n", "demo.jsonl");
  ASSERT_FALSE(nameless.ok());
  EXPECT_THAT(nameless.error().what, HasSubstr("demo.jsonl:1: a tool call has no \"name\""));
  EXPECT_TRUE(ScriptProvider::parse("# a comment\n\n{\"text\": \"ok\"}\n").ok());
}

TEST(ScriptProviderTest, TheEmbeddedDemoParses) {
  asio::io_context context;
  ScriptProvider demo = ScriptProvider::embedded_demo();
  ModelRequest request;
  request.messages.push_back(json::object{{"role", "user"}, {"content", json::array{json::object{{"type", "text"}, {"text", "go"}}}}});
  const ModelResponse first = wait(context, demo.complete(request));
  EXPECT_FALSE(first.tool_calls.empty());
  EXPECT_EQ(first.tool_calls[0].name, "bash");
}

class ModelTurnRunnerTest : public ::testing::Test {
 protected:
  std::shared_ptr<ModelTurnRunner> runner_for(std::string_view script) {
    auto provider = std::make_shared<ScriptProvider>(ScriptProvider::parse(script).value());
    registry_ = std::make_shared<tools::ToolRegistry>();
    registry_->add(std::make_unique<EchoTool>(calls_, &prepares_));
    return std::make_shared<ModelTurnRunner>(provider, registry_, TurnRunnerSettings{"You are a test desk."});
  }
  asio::io_context context_;
  std::vector<std::string> calls_;
  int prepares_ = 0;
  std::shared_ptr<tools::ToolRegistry> registry_;
  RecordingContext turn_;
};

TEST_F(ModelTurnRunnerTest, RunsToolCallsInOrderUntilTheModelAnswers) {
  auto runner = runner_for(
      R"({"steps": [{"text": "Checking.", "tool_calls": [{"name": "echo", "input": {"text": "a"}}, {"name": "echo", "input": {"text": "b"}}]}, {"text": "All done."}]})");
  const desk::TurnOutcome outcome = wait(context_, runner->run_turn("go", turn_));
  EXPECT_EQ(outcome.reply, "All done.");
  EXPECT_EQ(calls_, (std::vector<std::string>{"a", "b"}));
  std::vector<std::string> kinds;
  for (const auto& [kind, data] : turn_.events) kinds.push_back(kind);
  EXPECT_EQ(kinds, (std::vector<std::string>{"MODEL_TEXT", "TOOL_CALLED", "TOOL_FINISHED", "TOOL_CALLED",
                                             "TOOL_FINISHED", "MODEL_TEXT"}));
  // user, assistant (tool calls), user (results), assistant (answer)
  ASSERT_EQ(runner->transcript().size(), 4u);
  EXPECT_EQ(runner->transcript()[2].at("content").as_array()[1].at("content"), "b");
}

// The tools start what they need (the terminal) when the turn begins, while the model writes.
TEST_F(ModelTurnRunnerTest, ATurnLetsTheToolsPrepareOnceAsItBegins) {
  auto runner = runner_for(R"({"steps": [{"tool_calls": [{"name": "echo", "input": {"text": "a"}}]}, {"text": "ok"}]})");
  wait(context_, runner->run_turn("go", turn_));
  EXPECT_EQ(prepares_, 1);
}

TEST_F(ModelTurnRunnerTest, ToolErrorsAndUnknownToolsGoBackToTheModel) {
  auto runner = runner_for(
      R"({"steps": [{"tool_calls": [{"name": "echo", "input": {}}, {"name": "nope", "input": {}}]}, {"text": "noted"}]})");
  wait(context_, runner->run_turn("go", turn_));
  const auto& results = runner->transcript()[2].at("content").as_array();
  EXPECT_EQ(results[0].at("is_error"), true);
  EXPECT_EQ(results[1].at("is_error"), true);
}

TEST_F(ModelTurnRunnerTest, SteeringIsDeliveredAtTheNextToolRound) {
  auto runner = runner_for(
      R"({"steps": [{"tool_calls": [{"name": "echo", "input": {"text": "x"}}]}, {"text": "ok"}]})");
  desk::Trigger steering;
  steering.text = "use the weekly expiry";
  steering.sender = "ravi";
  turn_.steering.push_back(steering);
  wait(context_, runner->run_turn("go", turn_));
  const auto& results = runner->transcript()[2].at("content").as_array();
  ASSERT_EQ(results.size(), 2u);
  EXPECT_THAT(std::string(results[1].at("text").as_string()), HasSubstr("Message from ravi while you worked: use the weekly expiry"));
}

TEST_F(ModelTurnRunnerTest, OneScriptTurnPerDeskTurnAndSideQuestionsSpendNone) {
  auto runner = runner_for("{\"text\": \"first\"}\n{\"text\": \"second\"}\n");
  EXPECT_EQ(wait(context_, runner->run_turn("1", turn_)).reply, "first");
  EXPECT_THAT(wait(context_, runner->side_question("why?")), HasSubstr("side questions"));
  EXPECT_EQ(wait(context_, runner->run_turn("2", turn_)).reply, "second");
  EXPECT_EQ(wait(context_, runner->run_turn("3", turn_)).reply, "The script has no more turns.");
  const auto transcript_size = runner->transcript().size();
  wait(context_, runner->summarise());
  EXPECT_EQ(runner->transcript().size(), transcript_size);  // neither is written to the session
}

TEST_F(ModelTurnRunnerTest, ResumingASessionRestoresItsTranscript) {
  auto runner = runner_for("{\"text\": \"hi\"}\n");
  desk::Session session{"s-1", "2026-11-30", "yesterday we sold", json::array{json::object{{"role", "user"}, {"content", "old"}}}};
  runner->resume_session(session);
  EXPECT_EQ(runner->transcript().size(), 1u);
}

// The session and the day's usage are written off the event loop, and a turn stopped in the
// middle of a tool still leaves both on disk before it ends: the request it made, and its
// tool call answered.
TEST_F(ModelTurnRunnerTest, AStoppedTurnStillSavesItsSessionAndUsage) {
  std::string pattern = (std::filesystem::temp_directory_path() / "deskd-stopped-turn-XXXXXX").native();
  ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
  const std::filesystem::path root = pattern;
  SystemClock clock;
  desk::SessionKeeper keeper(root / "sessions", clock);
  desk::UsageTracker usage(clock, root / "usage.json", {});
  auto provider = std::make_shared<ScriptProvider>(
      ScriptProvider::parse(R"({"steps": [{"tool_calls": [{"name": "wait", "input": {}}]}, {"text": "never"}]})").value());
  bool started = false;
  auto registry = std::make_shared<tools::ToolRegistry>();
  registry->add(std::make_unique<WaitingTool>(started));
  auto runner = std::make_shared<ModelTurnRunner>(provider, registry, TurnRunnerSettings{"You are a test desk."},
                                                  &keeper, &usage);
  ASSERT_TRUE(keeper.start(*runner).ok());

  asio::cancellation_signal stop;
  std::exception_ptr ended;
  bool done = false;
  asio::co_spawn(context_, runner->run_turn("go", turn_),
                 asio::bind_cancellation_slot(stop.slot(), [&](std::exception_ptr escaped, desk::TurnOutcome) {
                   ended = escaped;
                   done = true;
                 }));
  for (int round = 0; round < 500 && !started; ++round) context_.run_for(std::chrono::milliseconds(10));
  ASSERT_TRUE(started);
  stop.emit(asio::cancellation_type::terminal);
  for (int round = 0; round < 500 && !done; ++round) context_.run_for(std::chrono::milliseconds(10));
  ASSERT_TRUE(done);
  EXPECT_TRUE(ended);  // the stop ends the turn

  std::ifstream session_file(root / "sessions/current.json");
  const std::string session((std::istreambuf_iterator<char>(session_file)), {});
  EXPECT_THAT(session, HasSubstr("tool_result"));
  std::ifstream usage_file(root / "usage.json");
  const std::string day((std::istreambuf_iterator<char>(usage_file)), {});
  EXPECT_THAT(day, HasSubstr("\"requests\":1"));
  std::filesystem::remove_all(root);
}

}  // namespace
}  // namespace deskd::model
