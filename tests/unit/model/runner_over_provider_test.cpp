// The agent loop over the real anthropic provider and the fake server: a turn, a /btw side
// question (no tools, nothing written to the session), the day's rollover summary, progress
// reported while a reply streams, usage with cache tokens recorded and priced, and a
// compaction whose summary the server keeps refusing.

#include <boost/asio.hpp>
#include <boost/json.hpp>

#include <gtest/gtest.h>

#include "base/clock.h"
#include "runner/desk/usage_tracker.h"
#include "runner/model/anthropic_provider.h"
#include "runner/model/model_turn_runner.h"
#include "runner/tools/tool_registry.h"
#include "unit/model/fake_http_server.h"
#include "unit/model/provider_test_support.h"

namespace deskd::model {
namespace {

namespace asio = boost::asio;
namespace json = boost::json;
using testing::BodyPiece;
using testing::FakeHttpServer;
using testing::FakeResponse;

std::string event(std::string_view name, const json::object& data) {
  return "event: " + std::string(name) + "\ndata: " + json::serialize(data) + "\n\n";
}

// A whole Messages API stream answering `text`, in pieces `delay` apart.
FakeResponse streamed_text(const std::string& text, std::chrono::milliseconds delay = std::chrono::milliseconds(0)) {
  std::vector<BodyPiece> pieces;
  pieces.push_back({event("message_start", {{"type", "message_start"},
                                            {"message", {{"id", "msg_1"}, {"type", "message"}, {"role", "assistant"},
                                                         {"model", "claude-test"}, {"content", json::array{}},
                                                         {"usage", {{"input_tokens", 1000}, {"cache_read_input_tokens", 500},
                                                                    {"cache_creation_input_tokens", 100}, {"output_tokens", 1}}}}}})});
  pieces.push_back({event("content_block_start",
                          {{"type", "content_block_start"}, {"index", 0}, {"content_block", {{"type", "text"}, {"text", ""}}}})});
  for (char c : text) {
    pieces.push_back({event("content_block_delta", {{"type", "content_block_delta"}, {"index", 0},
                                                    {"delta", {{"type", "text_delta"}, {"text", std::string(1, c)}}}}),
                      delay});
  }
  pieces.push_back({event("content_block_stop", {{"type", "content_block_stop"}, {"index", 0}})});
  pieces.push_back({event("message_delta", {{"type", "message_delta"}, {"delta", {{"stop_reason", "end_turn"}}},
                                            {"usage", {{"output_tokens", 200}}}})});
  pieces.push_back({event("message_stop", {{"type", "message_stop"}})});
  return FakeResponse::event_stream(std::move(pieces));
}

// A Messages API stream calling the tool `name` once, with `input_tokens` of context used.
FakeResponse streamed_tool_call(const std::string& id, const std::string& name, std::uint64_t input_tokens) {
  std::vector<BodyPiece> pieces;
  pieces.push_back({event("message_start", {{"type", "message_start"},
                                            {"message", {{"id", "msg_2"}, {"type", "message"}, {"role", "assistant"},
                                                         {"model", "claude-test"}, {"content", json::array{}},
                                                         {"usage", {{"input_tokens", input_tokens}, {"output_tokens", 1}}}}}})});
  pieces.push_back({event("content_block_start", {{"type", "content_block_start"}, {"index", 0},
                                                  {"content_block", {{"type", "tool_use"}, {"id", id}, {"name", name}, {"input", json::object{}}}}})});
  pieces.push_back({event("content_block_delta", {{"type", "content_block_delta"}, {"index", 0},
                                                  {"delta", {{"type", "input_json_delta"}, {"partial_json", "{\"command\": \"ls\"}"}}}})});
  pieces.push_back({event("content_block_stop", {{"type", "content_block_stop"}, {"index", 0}})});
  pieces.push_back({event("message_delta", {{"type", "message_delta"}, {"delta", {{"stop_reason", "tool_use"}}},
                                            {"usage", {{"output_tokens", 20}}}})});
  pieces.push_back({event("message_stop", {{"type", "message_stop"}})});
  return FakeResponse::event_stream(std::move(pieces));
}

// A tool that lists a pretend folder.
class ListTool final : public tools::Tool {
 public:
  std::string_view name() const override { return "bash"; }
  std::string_view description() const override { return "Runs a command."; }
  std::string_view input_schema() const override { return R"({"type":"object"})"; }
  asio::awaitable<tools::ToolResult> call(const json::object&) override { co_return tools::ToolResult::success("plan.md"); }
};

FakeResponse overloaded() {
  return FakeResponse::json(529, R"({"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}})");
}

class CountingContext final : public desk::TurnContext {
 public:
  std::vector<desk::Trigger> take_steering() override { return {}; }
  void publish(const std::string& kind, json::object data) override { events.emplace_back(kind, std::move(data)); }
  std::vector<std::pair<std::string, json::object>> events;
  void progress() override { ++progress_calls; }
  int progress_calls = 0;
};

class RunnerOverProviderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char folder[] = "/var/tmp/deskd-runner-provider-XXXXXX";
    ASSERT_NE(::mkdtemp(folder), nullptr);
    folder_ = folder;
    desk::PriceTable prices{{"claude-test", desk::ModelPrice{3.0, 15.0, 0.3, 3.75}}};
    usage_ = std::make_unique<desk::UsageTracker>(clock_, folder_ / "usage.json", prices);
    auto created = AnthropicProvider::create(io_.get_executor(), testing::test_settings(server_.url(""), "claude-test"));
    ASSERT_TRUE(created.ok()) << created.error().what;
    runner_ = std::make_unique<ModelTurnRunner>(std::shared_ptr<ModelProvider>(std::move(created).value()), nullptr,
                                                TurnRunnerSettings{"You run the test desk."}, nullptr, usage_.get());
  }
  void TearDown() override {
    runner_.reset();
    std::filesystem::remove_all(folder_);
  }

  template <typename T>
  T wait(asio::awaitable<T> operation) {
    auto future = asio::co_spawn(io_, std::move(operation), asio::use_future);
    io_.restart();
    io_.run();
    return future.get();
  }

  json::object request_body(std::size_t index) const { return json::parse(server_.requests().at(index).body).as_object(); }

  static std::string last_user_text(const json::object& body) {
    const json::object& last = body.at("messages").as_array().back().as_object();
    EXPECT_EQ(last.at("role"), "user");
    std::string text;
    for (const auto& block : last.at("content").as_array()) {
      if (block.at("type") == "text") text += std::string(block.at("text").as_string());
    }
    return text;
  }

  SystemClock clock_;
  std::filesystem::path folder_;
  FakeHttpServer server_;
  asio::io_context io_;
  std::unique_ptr<desk::UsageTracker> usage_;
  std::unique_ptr<ModelTurnRunner> runner_;
  CountingContext context_;
};

TEST_F(RunnerOverProviderTest, ASideQuestionUsesTheSessionWithoutToolsAndWritesNothing) {
  server_.enqueue(streamed_text("Bought 2 lots."));
  server_.enqueue(streamed_text("Because the plan allows 4."));
  EXPECT_EQ(wait(runner_->run_turn("What did you do?", context_)).reply, "Bought 2 lots.");
  const auto transcript = runner_->transcript();
  EXPECT_EQ(wait(runner_->side_question("why only 2?")), "Because the plan allows 4.");
  EXPECT_EQ(runner_->transcript(), transcript);  // nothing written to the session
  const json::object side = request_body(1);
  EXPECT_FALSE(side.contains("tools"));
  // The session's context comes first, then the question.
  EXPECT_GE(side.at("messages").as_array().size(), 3u);
  EXPECT_NE(last_user_text(side).find("why only 2?"), std::string::npos);
}

TEST_F(RunnerOverProviderTest, TheRolloverSummaryIsAModelCallOverTheSession) {
  server_.enqueue(streamed_text("Closed flat."));
  server_.enqueue(streamed_text("Summary: flat, watch 24,000."));
  wait(runner_->run_turn("Close the day.", context_));
  EXPECT_EQ(wait(runner_->summarise()), "Summary: flat, watch 24,000.");
  const json::object summary = request_body(1);
  EXPECT_FALSE(summary.contains("tools"));
  EXPECT_NE(last_user_text(summary).find("Summarise this session for tomorrow"), std::string::npos);
}

TEST_F(RunnerOverProviderTest, AStreamingReplyIsProgressForTheStallTimer) {
  server_.enqueue(streamed_text("steady", std::chrono::milliseconds(5)));
  wait(runner_->run_turn("go", context_));
  // One call per piece as it arrives, not one at the end.
  EXPECT_GE(context_.progress_calls, 6);
}

TEST_F(RunnerOverProviderTest, UsageWithCacheTokensIsRecordedAndPriced) {
  server_.enqueue(streamed_text("ok"));
  wait(runner_->run_turn("go", context_));
  const desk::DailyUsage today = usage_->today();
  ASSERT_EQ(today.models.count("claude-test"), 1u);
  const desk::ModelUsage& used = today.models.at("claude-test");
  EXPECT_EQ(used.tokens.input_tokens, 1000u);
  EXPECT_EQ(used.tokens.output_tokens, 200u);
  EXPECT_EQ(used.tokens.cache_read_tokens, 500u);
  EXPECT_EQ(used.tokens.cache_write_tokens, 100u);
  ASSERT_TRUE(used.cost_usd.has_value());
  // 1000×3 + 200×15 + 500×0.3 + 100×3.75 per million.
  EXPECT_NEAR(*used.cost_usd, (3000 + 3000 + 150 + 375) / 1e6, 1e-9);
  EXPECT_NE(usage_->describe().find("claude-test"), std::string::npos);
}

TEST_F(RunnerOverProviderTest, ARetriedFailureIsVisibleAsAnEventWithoutTheKey) {
  server_.enqueue(FakeResponse::json(
      529, R"({"type":"error","error":{"type":"overloaded_error","message":"Overloaded )" + std::string(testing::kApiKey) + R"("}})"));
  server_.enqueue(streamed_text("ok"));
  EXPECT_EQ(wait(runner_->run_turn("go", context_)).reply, "ok");
  ASSERT_FALSE(context_.events.empty());
  EXPECT_EQ(context_.events.front().first, "MODEL_RETRYING");
  const std::string reason(context_.events.front().second.at("reason").as_string());
  EXPECT_NE(reason.find("Overloaded"), std::string::npos) << reason;
  EXPECT_NE(reason.find("(attempt 2 of 4)"), std::string::npos) << reason;
  EXPECT_EQ(reason.find(testing::kApiKey), std::string::npos) << reason;
}

TEST_F(RunnerOverProviderTest, ASummaryRefusedFourTimesLeavesASessionTheServerStillAccepts) {
  server_.enqueue(streamed_text("Hello."));
  // Past 0.8 of the 200000-token window: the runner asks for a summary, which the server
  // refuses at every attempt. The tool call stays answered, and the desk goes on.
  server_.enqueue(streamed_tool_call("toolu_c1", "bash", 190000));
  for (int attempt = 0; attempt < 4; ++attempt) server_.enqueue(overloaded());
  server_.enqueue(streamed_text("Listed."));
  server_.enqueue(streamed_text("The next turn works."));
  auto registry = std::make_shared<tools::ToolRegistry>();
  registry->add(std::make_unique<ListTool>());
  auto provider = AnthropicProvider::create(io_.get_executor(), testing::test_settings(server_.url(""), "claude-test"));
  ASSERT_TRUE(provider.ok()) << provider.error().what;
  ModelTurnRunner runner(std::shared_ptr<ModelProvider>(std::move(provider).value()), registry,
                         TurnRunnerSettings{"You run the test desk."});
  EXPECT_EQ(wait(runner.run_turn("Good morning.", context_)).reply, "Hello.");
  EXPECT_EQ(wait(runner.run_turn("List the folder.", context_)).reply, "Listed.");
  EXPECT_EQ(wait(runner.run_turn("And now?", context_)).reply, "The next turn works.");
  ASSERT_EQ(server_.requests().size(), 8u);
  EXPECT_FALSE(request_body(2).contains("tools"));  // the summary
  bool failure_told = false;
  for (const auto& [kind, data] : context_.events) failure_told = failure_told || kind == "SESSION_COMPACTION_FAILED";
  EXPECT_TRUE(failure_told);
  // What the real API checks: the message after a tool_use holds its tool_result.
  for (std::size_t index : {std::size_t{6}, std::size_t{7}}) {
    const json::object body = request_body(index);
    const json::array& messages = body.at("messages").as_array();
    bool call_seen = false;
    for (std::size_t message = 0; message < messages.size(); ++message) {
      for (const auto& block : messages[message].at("content").as_array()) {
        if (block.at("type") != "tool_use") continue;
        call_seen = true;
        ASSERT_LT(message + 1, messages.size()) << "request " << index << " ends with an unanswered tool call";
        const auto& next = messages[message + 1].at("content").as_array();
        EXPECT_TRUE(std::any_of(next.begin(), next.end(), [&](const json::value& answer) {
          return answer.at("type") == "tool_result" && answer.at("tool_use_id") == block.at("id");
        })) << "request " << index << ": " << json::serialize(messages);
      }
    }
    EXPECT_TRUE(call_seen);
  }
}

}  // namespace
}  // namespace deskd::model
