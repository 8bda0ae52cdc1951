// Replies that arrive whole but cannot be used, through the agent loop and the real
// providers against the fake server: a refusal (Anthropic's stop_reason "refusal", OpenAI's
// refusal content, the Responses API's refusal part) and a reply cut inside a tool call are
// billed, so they are counted in /usage and settled in the budget with the usage the server
// sent; a refused message leaves the session, so the next message is not merged with it.
// Also DeepSeek's reasoning_content: kept in the transcript and sent back in tool exchanges.
// The streams are the recorded ones of anthropic_recorded_streams.h,
// openai_recorded_streams.h and responses_recorded_streams.h, each naming its source.

#include <boost/asio.hpp>
#include <boost/json.hpp>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "base/clock.h"
#include "runner/desk/budget_keeper.h"
#include "runner/desk/usage_tracker.h"
#include "runner/model/anthropic_provider.h"
#include "runner/model/model_turn_runner.h"
#include "runner/model/openai_provider.h"
#include "runner/model/responses_provider.h"
#include "tests/unit/model/anthropic_recorded_streams.h"
#include "tests/unit/model/fake_http_server.h"
#include "tests/unit/model/openai_recorded_streams.h"
#include "tests/unit/model/provider_test_support.h"
#include "tests/unit/model/responses_recorded_streams.h"

namespace deskd::model {
namespace {

namespace asio = boost::asio;
namespace json = boost::json;
using testing::FakeHttpServer;
using testing::FakeResponse;
using ::testing::HasSubstr;

FakeResponse billed_wire(std::string_view text) { return FakeResponse::event_stream({{std::string(text)}}); }

class BilledTurnContext final : public desk::TurnContext {
 public:
  std::vector<desk::Trigger> take_steering() override { return {}; }
  void publish(const std::string&, json::object) override {}
  void progress() override {}
};

// Every user text the request sent, joined: what the model was asked.
std::string asked_user_text(const json::object& body) {
  std::string text;
  for (const json::value& message : body.at("messages").as_array()) {
    if (message.at("role") != "user") continue;
    const json::value& content = message.at("content");
    if (content.is_string()) text += std::string(content.as_string()) + "|";
    if (!content.is_array()) continue;
    for (const json::value& block : content.as_array()) {
      if (block.at("type") == "text") text += std::string(block.at("text").as_string()) + "|";
    }
  }
  return text;
}

class BilledRepliesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char folder[] = "/var/tmp/deskd-billed-XXXXXX";
    ASSERT_NE(::mkdtemp(folder), nullptr);
    folder_ = folder;
    desk::PriceTable prices{{"claude-opus-4-7", desk::ModelPrice{15.0, 75.0, 1.5, 18.75}},
                            {"claude-sonnet-4-5-20250929", desk::ModelPrice{3.0, 15.0, 0.3, 3.75}},
                            {"gpt-4o-2024-08-06", desk::ModelPrice{2.5, 10.0, 1.25, 0}},
                            {"gpt-5.4", desk::ModelPrice{1.25, 10.0, 0.125, 0}}};
    // The configured model's price is what the budget reserves a call's worst case with.
    usage_ = std::make_unique<desk::UsageTracker>(clock_, folder_ / "usage.json", prices, "claude-opus-4-7");
    budget_ = std::make_unique<desk::BudgetKeeper>(
        clock_, *usage_, desk::BudgetCaps{1000.0, std::nullopt, std::nullopt}, 1024, folder_ / "raise.json");
  }
  void TearDown() override {
    runner_.reset();
    std::filesystem::remove_all(folder_);
  }

  void run_over(Result<std::shared_ptr<ModelProvider>> provider) {
    ASSERT_TRUE(provider.ok()) << provider.error().what;
    TurnRunnerSettings settings{"You run the test desk."};
    settings.context_window_tokens = 100'000'000;  // the recorded replies' large inputs are not this test's matter
    runner_ = std::make_unique<ModelTurnRunner>(std::move(provider).value(), nullptr, settings, nullptr, usage_.get(),
                                                budget_.get());
  }
  template <typename Provider>
  static Result<std::shared_ptr<ModelProvider>> shared(Result<std::unique_ptr<Provider>> made) {
    if (!made.ok()) return std::move(made).error();
    return std::shared_ptr<ModelProvider>(std::move(made).value());
  }

  // The turn's reply, or its failure's message.
  std::string turn(std::string message) {
    auto future = asio::co_spawn(io_, runner_->run_turn(std::move(message), context_), asio::use_future);
    io_.restart();
    io_.run();
    try {
      return future.get().reply;
    } catch (const std::exception& error) {
      return std::string("failed: ") + error.what();
    }
  }
  json::object request_body(std::size_t index) const {
    return json::parse(server_.requests().at(index).body).as_object();
  }
  const desk::ModelUsage& used(const std::string& model) const {
    static desk::ModelUsage none;
    today_ = usage_->today();
    auto found = today_.models.find(model);
    EXPECT_NE(found, today_.models.end()) << model << " was not counted";
    return found != today_.models.end() ? found->second : none;
  }

  SystemClock clock_;
  std::filesystem::path folder_;
  FakeHttpServer server_;
  asio::io_context io_;
  std::unique_ptr<desk::UsageTracker> usage_;
  std::unique_ptr<desk::BudgetKeeper> budget_;
  std::unique_ptr<ModelTurnRunner> runner_;
  BilledTurnContext context_;
  mutable desk::DailyUsage today_;
};

TEST_F(BilledRepliesTest, AnAnthropicRefusalIsCountedSettledAndTakenOutOfTheSession) {
  server_.enqueue(billed_wire(testing::cut_reply("end_turn")));
  server_.enqueue(billed_wire(testing::kRefusalStream));
  server_.enqueue(billed_wire(testing::cut_reply("end_turn")));
  run_over(shared(
      AnthropicProvider::create(io_.get_executor(), testing::test_settings(server_.url(""), "claude-opus-4-7"))));

  EXPECT_EQ(turn("Good morning."), "The levels for today are: pivot 24150, support");
  const json::array before = runner_->transcript();
  const std::string refused = turn("Something the model refuses.");
  EXPECT_THAT(refused, HasSubstr("The model refused to continue: This request was refused due to policy."));
  EXPECT_THAT(refused, HasSubstr("taken out of the session"));
  EXPECT_EQ(runner_->transcript(), before) << "the refused message left the session";

  // Billed as the stream said (message_start's input, message_delta's output), and settled.
  EXPECT_EQ(used("claude-opus-4-7").requests, 1u);
  EXPECT_EQ(used("claude-opus-4-7").tokens, (desk::Usage{20, 120, 0, 0}));
  ASSERT_TRUE(used("claude-opus-4-7").cost_usd);
  EXPECT_NEAR(*used("claude-opus-4-7").cost_usd, (20 * 15.0 + 120 * 75.0) / 1e6, 1e-12);
  EXPECT_EQ(budget_->status().reserved_usd, 0.0) << "the refused call's reservation was settled, not left open";
  EXPECT_NEAR(budget_->status().spent_usd,
              *used("claude-opus-4-7").cost_usd + *used("claude-sonnet-4-5-20250929").cost_usd, 1e-9);
  EXPECT_EQ(runner_->requests(), 2u);

  EXPECT_EQ(turn("Next."), "The levels for today are: pivot 24150, support");
  const json::object next = request_body(2);
  EXPECT_EQ(asked_user_text(next), "Good morning.|Next.|") << "not merged with the refused message";
}

TEST_F(BilledRepliesTest, AnOpenAiRefusalIsCountedAndLeavesTheSession) {
  server_.enqueue(billed_wire(testing::kOpenAiRefusalStream));
  server_.enqueue(billed_wire(testing::kOpenAiRefusalStream));
  run_over(shared(OpenAiProvider::create(io_.get_executor(), testing::test_settings(server_.url("/v1"), "gpt-4o"))));
  EXPECT_THAT(turn("Refuse this."), HasSubstr("I'm sorry, but I can't assist with that request."));
  EXPECT_TRUE(runner_->transcript().empty());
  EXPECT_THAT(turn("And this."), HasSubstr("taken out of the session"));
  EXPECT_EQ(asked_user_text(request_body(1)), "And this.|");
  EXPECT_EQ(used("gpt-4o-2024-08-06").requests, 2u);
  EXPECT_EQ(used("gpt-4o-2024-08-06").tokens, (desk::Usage{34, 24, 0, 0}));
  EXPECT_EQ(budget_->status().reserved_usd, 0.0);
}

TEST_F(BilledRepliesTest, AResponsesRefusalIsCounted) {
  server_.enqueue(billed_wire(testing::kResponsesRefusalStream));
  run_over(
      shared(ResponsesProvider::create(io_.get_executor(), testing::test_settings(server_.url("/v1"), "gpt-5.4"))));
  EXPECT_THAT(turn("Refuse this."), HasSubstr("refused"));
  EXPECT_EQ(used("gpt-5.4").tokens, (desk::Usage{17, 12, 0, 0}));
  EXPECT_TRUE(runner_->transcript().empty());
}

TEST_F(BilledRepliesTest, AReplyCutInsideAToolCallIsCountedAndTheMessageStays) {
  server_.enqueue(billed_wire(testing::kResponsesCutToolCallStream));
  run_over(
      shared(ResponsesProvider::create(io_.get_executor(), testing::test_settings(server_.url("/v1"), "gpt-5.4"))));
  EXPECT_THAT(turn("Write the plan."), HasSubstr("in the middle of a tool call (write_file)"));
  EXPECT_EQ(used("gpt-5.4").requests, 1u);
  EXPECT_EQ(used("gpt-5.4").tokens, (desk::Usage{900, 64, 0, 0}));
  EXPECT_EQ(budget_->status().reserved_usd, 0.0);
  // Not a refusal: the message stays, for the model to answer more briefly next time.
  ASSERT_EQ(runner_->transcript().size(), 1u);
  EXPECT_THAT(json::serialize(runner_->transcript()), HasSubstr("Write the plan."));
}

TEST_F(BilledRepliesTest, AFailureBeforeAnyReplyReleasesItsReservationAndCountsNothing) {
  server_.enqueue(FakeResponse::json(
      400, R"({"error":{"message":"Invalid model.","type":"invalid_request_error","param":null,"code":null}})"));
  run_over(shared(OpenAiProvider::create(io_.get_executor(), testing::test_settings(server_.url("/v1"), "gpt-4o"))));
  EXPECT_THAT(turn("Hello."), HasSubstr("HTTP 400"));
  EXPECT_TRUE(usage_->today().models.empty());
  EXPECT_EQ(budget_->status().reserved_usd, 0.0);
  EXPECT_EQ(runner_->requests(), 0u);
}

}  // namespace
}  // namespace deskd::model
