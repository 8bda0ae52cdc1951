// The agent loop over the real anthropic provider and the fake server: a turn, a /btw side
// question (no tools, nothing written to the session), the day's rollover summary, progress
// reported while a reply streams, and usage with cache tokens recorded and priced.

#include <boost/asio.hpp>
#include <boost/json.hpp>

#include <gtest/gtest.h>

#include "base/clock.h"
#include "runner/desk/usage_tracker.h"
#include "runner/model/anthropic_provider.h"
#include "runner/model/model_turn_runner.h"
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

}  // namespace
}  // namespace deskd::model
