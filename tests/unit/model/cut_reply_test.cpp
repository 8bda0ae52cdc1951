// The agent loop with replies cut by a limit: the cut is published (MODEL_REPLY_CUT) and
// the turn's outcome says so; with continue_after_max_tokens the model is asked once to go
// on; the model hears of a cut it was not asked to finish with the next message; usage the
// server did not report is filed as unknown; the provider's blocks (thinking first) go to
// the transcript in their order; and the script provider passes over blocks it does not know.

#include <boost/asio.hpp>
#include <boost/json.hpp>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <deque>

#include "base/clock.h"
#include "runner/desk/session_keeper.h"
#include "runner/desk/usage_tracker.h"
#include "runner/model/model_turn_runner.h"
#include "runner/model/script_provider.h"

namespace deskd::model {
namespace {

namespace asio = boost::asio;
namespace json = boost::json;
using ::testing::HasSubstr;

class CutQueueProvider final : public ModelProvider {
 public:
  asio::awaitable<ModelResponse> complete(ModelRequest request) override {
    requests.push_back(request);
    if (answers.empty()) throw std::runtime_error("no more answers");
    ModelResponse next = std::move(answers.front());
    answers.pop_front();
    co_return next;
  }
  std::string describe() const override { return "queue"; }
  std::deque<ModelResponse> answers;
  std::vector<ModelRequest> requests;
};

class Recorder final : public desk::TurnContext {
 public:
  std::vector<desk::Trigger> take_steering() override { return {}; }
  void publish(const std::string& kind, json::object data) override { events.emplace_back(kind, std::move(data)); }
  void progress() override {}
  const json::object* find(std::string_view kind) const {
    for (const auto& [name, data] : events) {
      if (name == kind) return &data;
    }
    return nullptr;
  }
  std::vector<std::pair<std::string, json::object>> events;
};

ModelResponse answer(std::string text, std::string stop_reason) {
  ModelResponse response;
  response.text = std::move(text);
  response.stop_reason = std::move(stop_reason);
  response.model = "claude-haiku-4-5-20251001";
  response.usage.input_tokens = 10;
  return response;
}

std::string last_user_text(const ModelRequest& request) {
  std::string text;
  for (const auto& block : request.messages.back().at("content").as_array()) {
    if (block.at("type") == "text") text += std::string(block.at("text").as_string()) + "\n";
  }
  return text;
}

class CutReplyTest : public ::testing::Test {
 protected:
  template <typename T>
  T wait(asio::awaitable<T> operation) {
    auto future = asio::co_spawn(io_, std::move(operation), asio::use_future);
    io_.restart();
    io_.run();
    return future.get();
  }
  TurnRunnerSettings settings(bool go_on) {
    TurnRunnerSettings made{"system"};
    made.max_tokens = 1000;
    made.continue_after_max_tokens = go_on;
    return made;
  }
  std::shared_ptr<CutQueueProvider> provider_ = std::make_shared<CutQueueProvider>();
  asio::io_context io_;
  Recorder context_;
};

TEST_F(CutReplyTest, AReplyCutAtMaxTokensIsPublishedAndTheOutcomeSaysSo) {
  provider_->answers.push_back(answer("The levels are: pivot 24150, sup", "max_tokens"));
  provider_->answers.push_back(answer("Fine.", "end_turn"));
  ModelTurnRunner runner(provider_, nullptr, settings(false));
  const desk::TurnOutcome outcome = wait(runner.run_turn("Levels?", context_));
  EXPECT_EQ(outcome.reply, "The levels are: pivot 24150, sup");
  EXPECT_EQ(outcome.cut_reason, "max_tokens");
  const json::object* cut = context_.find("MODEL_REPLY_CUT");
  ASSERT_NE(cut, nullptr);
  EXPECT_EQ(*cut, (json::object{{"reason", "max_tokens"},
                                 {"max_tokens", 1000},
                                 {"continuing", false},
                                 {"limit", "its max_tokens limit (1000)"},
                                 {"advice", "raise max_tokens or ask for less"}}));
  EXPECT_EQ(provider_->requests.size(), 1u) << "not continued unless configured";

  // The model hears of the cut with the next message, before the user's words.
  const desk::TurnOutcome next = wait(runner.run_turn("Thanks.", context_));
  EXPECT_TRUE(next.cut_reason.empty());
  EXPECT_THAT(last_user_text(provider_->requests.at(1)),
              HasSubstr("[deskd: your last reply was cut at its max_tokens limit (1000 tokens); the user saw it only up to the cut.]\nThanks."));
}

TEST_F(CutReplyTest, AContextWindowCutIsNeverContinued) {
  provider_->answers.push_back(answer("Half an answ", "model_context_window_exceeded"));
  ModelTurnRunner runner(provider_, nullptr, settings(true));
  const desk::TurnOutcome outcome = wait(runner.run_turn("Levels?", context_));
  EXPECT_EQ(outcome.cut_reason, "model_context_window_exceeded");
  ASSERT_NE(context_.find("MODEL_REPLY_CUT"), nullptr);
  EXPECT_EQ(context_.find("MODEL_REPLY_CUT")->at("continuing"), false);
  EXPECT_EQ(provider_->requests.size(), 1u);
}

TEST_F(CutReplyTest, AMaxTokensCutMayGoOnOncePerTurn) {
  provider_->answers.push_back(answer("The levels are: pivot 24150, sup", "max_tokens"));
  provider_->answers.push_back(answer("port 23908, resistance", "max_tokens"));
  ModelTurnRunner runner(provider_, nullptr, settings(true));
  const desk::TurnOutcome outcome = wait(runner.run_turn("Levels?", context_));
  ASSERT_EQ(provider_->requests.size(), 2u) << "one continuation, not more";
  EXPECT_THAT(last_user_text(provider_->requests[1]), HasSubstr("your reply was cut at its max_tokens limit (1000 tokens). Continue exactly"));
  EXPECT_EQ(outcome.reply, "The levels are: pivot 24150, support 23908, resistance");
  EXPECT_EQ(outcome.cut_reason, "max_tokens") << "the continuation was cut too";
  int cuts = 0;
  for (const auto& [kind, data] : context_.events) {
    if (kind != "MODEL_REPLY_CUT") continue;
    EXPECT_EQ(data.at("continuing"), cuts == 0);
    ++cuts;
  }
  EXPECT_EQ(cuts, 2);
  // User and assistant still take turns.
  const json::array& transcript = runner.transcript();
  for (std::size_t index = 1; index < transcript.size(); ++index) {
    EXPECT_NE(transcript[index].at("role"), transcript[index - 1].at("role"));
  }
}

TEST_F(CutReplyTest, AContinuationThatFinishesEndsTheTurnWhole) {
  provider_->answers.push_back(answer("The levels are: pivot 24150, sup", "max_tokens"));
  provider_->answers.push_back(answer("port 23908.", "end_turn"));
  ModelTurnRunner runner(provider_, nullptr, settings(true));
  const desk::TurnOutcome outcome = wait(runner.run_turn("Levels?", context_));
  EXPECT_EQ(outcome.reply, "The levels are: pivot 24150, support 23908.");
  EXPECT_TRUE(outcome.cut_reason.empty());
}

TEST_F(CutReplyTest, TheProvidersBlocksGoToTheTranscriptInTheirOrder) {
  ModelResponse thought = answer("", "tool_use");
  thought.tool_calls.push_back(ToolCall{"toolu_1", "bash", json::object{{"command", "ls"}}});
  thought.content = json::parse(R"([{"type":"thinking","thinking":"Look first.","signature":"EqQB"},
                                    {"type":"tool_use","id":"toolu_1","name":"bash","input":{"command":"ls"}}])").as_array();
  provider_->answers.push_back(thought);
  provider_->answers.push_back(answer("Done.", "end_turn"));
  ModelTurnRunner runner(provider_, nullptr, settings(false));
  wait(runner.run_turn("Look.", context_));
  EXPECT_EQ(runner.transcript().at(1).at("content"), thought.content);
  EXPECT_EQ(provider_->requests.at(1).messages.at(1).at("content"), thought.content) << "sent back unchanged";
  EXPECT_EQ(runner.transcript().at(2).at("content").at(0).at("tool_use_id"), "toolu_1");
}

ModelResponse thought(const std::string& id) {
  ModelResponse response = answer("", "tool_use");
  response.tool_calls.push_back(ToolCall{id, "bash", json::object{{"command", "ls"}}});
  response.content = json::array{
      json::object{{"type", "thinking"}, {"thinking", "Look first, " + id + "."}, {"signature", "EqQB-" + id}},
      json::object{{"type", "redacted_thinking"}, {"data", "EmwK-" + id}},
      json::object{{"type", "tool_use"}, {"id", id}, {"name", "bash"}, {"input", {{"command", "ls"}}}}};
  return response;
}

TEST_F(CutReplyTest, ThinkingBlocksSurviveTheSessionFileAndARestart) {
  char folder[] = "/var/tmp/deskd-thinking-session-XXXXXX";
  ASSERT_NE(::mkdtemp(folder), nullptr);
  SystemClock clock;
  const ModelResponse first = thought("toolu_1");
  provider_->answers.push_back(first);
  provider_->answers.push_back(answer("Done.", "end_turn"));
  {
    desk::SessionKeeper keeper(folder, clock);
    ModelTurnRunner runner(provider_, nullptr, settings(false), &keeper);
    ASSERT_TRUE(keeper.start(runner).ok());
    wait(runner.run_turn("Look.", context_));
  }
  desk::SessionKeeper keeper(folder, clock);
  ModelTurnRunner restarted(provider_, nullptr, settings(false), &keeper);
  ASSERT_TRUE(keeper.start(restarted).ok());
  EXPECT_EQ(restarted.transcript().at(1).at("content"), first.content);
  provider_->answers.push_back(answer("Again.", "end_turn"));
  wait(restarted.run_turn("Again?", context_));
  EXPECT_EQ(provider_->requests.back().messages.at(1).at("content"), first.content) << "sent back unchanged after a restart";
  std::filesystem::remove_all(folder);
}

TEST_F(CutReplyTest, CompactionKeepsTheThinkingOfWhatItKeeps) {
  TurnRunnerSettings small = settings(false);
  small.context_window_tokens = 1000;
  small.compaction_share = 0.5;
  provider_->answers.push_back(thought("toolu_1"));
  provider_->answers.push_back(answer("Done 1.", "end_turn"));
  const ModelResponse second = thought("toolu_2");
  provider_->answers.push_back(second);
  ModelResponse full = answer("Done 2.", "end_turn");
  full.usage.input_tokens = 900;
  provider_->answers.push_back(full);
  provider_->answers.push_back(answer("SUMMARY", "end_turn"));
  ModelTurnRunner runner(provider_, nullptr, small);
  wait(runner.run_turn("a", context_));
  wait(runner.run_turn("b", context_));
  ASSERT_NE(context_.find("SESSION_COMPACTED"), nullptr);
  EXPECT_EQ(provider_->requests.back().purpose, Purpose::summary);
  const json::array& transcript = runner.transcript();
  ASSERT_EQ(transcript.size(), 4u) << json::serialize(transcript);
  EXPECT_THAT(std::string(transcript[0].at("content").at(0).at("text").as_string()), HasSubstr("SUMMARY"));
  EXPECT_EQ(transcript[1].at("content"), second.content) << "the kept assistant message, thinking first, unchanged";
  EXPECT_EQ(transcript[2].at("content").at(0).at("tool_use_id"), "toolu_2");
}

TEST_F(CutReplyTest, UsageTheServerDidNotReportIsUnknownNotZero) {
  char folder[] = "/var/tmp/deskd-cut-usage-XXXXXX";
  ASSERT_NE(::mkdtemp(folder), nullptr);
  SystemClock clock;
  desk::UsageTracker usage(clock, std::filesystem::path(folder) / "usage.json", {});
  ModelResponse unreported = answer("Hi.", "end_turn");
  unreported.model = "llama3.1";
  unreported.usage_reported = false;
  provider_->answers.push_back(unreported);
  ModelTurnRunner runner(provider_, nullptr, settings(false), nullptr, &usage);
  wait(runner.run_turn("hi", context_));
  const desk::DailyUsage today = usage.today();
  const desk::ModelUsage& filed = today.models.at("llama3.1");
  EXPECT_EQ(filed.requests, 1u);
  EXPECT_EQ(filed.unreported_requests, 1u);
  EXPECT_THAT(usage.describe(), HasSubstr("tokens unknown (the server reported no token counts)"));
  std::filesystem::remove_all(folder);
}

TEST(ScriptProviderBlocksTest, BlocksOfOtherProvidersArePassedOver) {
  asio::io_context io;
  auto script = ScriptProvider::parse("{\"tool_calls\": [{\"name\": \"bash\", \"input\": {}}]}\n{\"text\": \"second\"}\n");
  ASSERT_TRUE(script.ok());
  ModelRequest request;
  request.messages = json::parse(R"([
    {"role": "user", "content": [{"type": "text", "text": "go"}]},
    {"role": "assistant", "content": [{"type": "thinking", "thinking": "x", "signature": "s"}, {"type": "redacted_thinking", "data": "d"}]},
    {"role": "user", "content": [{"type": "web_search_tool_result", "content": []}, 42, {"no_type": true}, {"type": "text", "text": "more"}]}
  ])").as_array();
  auto future = asio::co_spawn(io, script->complete(request), asio::use_future);
  io.run();
  const ModelResponse response = future.get();
  ASSERT_EQ(response.tool_calls.size(), 1u) << "the request started a turn: its last message holds no tool result";
}

}  // namespace
}  // namespace deskd::model
