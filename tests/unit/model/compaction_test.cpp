// The agent loop's long-session care: a paused turn (pause_turn) goes on, a session past
// its share of the context window has its older part summarised into one message without
// splitting a tool call from its result, and neither a failed summary nor a turn that ends
// mid-round leaves a tool call without its result (a real API refuses such a session).

#include <boost/asio.hpp>
#include <boost/json.hpp>

#include <gtest/gtest.h>

#include <deque>
#include <set>

#include "runner/model/context_budget.h"
#include "runner/model/model_turn_runner.h"
#include "runner/tools/tool_registry.h"

namespace deskd::model {
namespace {

namespace asio = boost::asio;
namespace json = boost::json;

// Answers from a queue and records every request it was given.
class QueueProvider final : public ModelProvider {
 public:
  asio::awaitable<ModelResponse> complete(ModelRequest request) override {
    requests.push_back(request);
    if (request.purpose == Purpose::summary) {
      if (fail_summaries) throw std::runtime_error("HTTP 529 (overloaded_error): Overloaded, after 4 attempts");
      ModelResponse summary;
      summary.text = "SUMMARY";
      co_return summary;
    }
    if (answers.empty()) throw std::runtime_error("no more answers");
    ModelResponse next = std::move(answers.front());
    answers.pop_front();
    co_return next;
  }
  std::string describe() const override { return "queue"; }
  std::deque<ModelResponse> answers;
  std::vector<ModelRequest> requests;
  bool fail_summaries = false;
};

// What the Messages API insists on: user and assistant take turns, and every tool call is
// answered by a tool_result in the very next message.
void expect_a_valid_session(const json::array& messages) {
  for (std::size_t index = 0; index < messages.size(); ++index) {
    const json::object& message = messages[index].as_object();
    if (index > 0) {
      EXPECT_NE(message.at("role"), messages[index - 1].at("role")) << "two messages in a row from one side at " << index;
    }
    if (message.at("role") != "assistant") continue;
    for (const auto& block : message.at("content").as_array()) {
      if (block.at("type") != "tool_use") continue;
      bool answered = false;
      if (index + 1 < messages.size()) {
        for (const auto& next : messages[index + 1].at("content").as_array()) {
          answered = answered || (next.at("type") == "tool_result" && next.at("tool_use_id") == block.at("id"));
        }
      }
      EXPECT_TRUE(answered) << "the tool call " << json::serialize(block) << " has no result";
    }
  }
}

class NoSteering final : public desk::TurnContext {
 public:
  std::vector<desk::Trigger> take_steering() override { return {}; }
  void publish(const std::string& kind, json::object data) override { events.emplace_back(kind, std::move(data)); }
  void progress() override {}
  std::vector<std::pair<std::string, json::object>> events;
};

ModelResponse answer(std::string text, std::uint64_t input_tokens = 10, std::string stop_reason = "end_turn") {
  ModelResponse response;
  response.text = std::move(text);
  response.usage.input_tokens = input_tokens;
  response.stop_reason = std::move(stop_reason);
  return response;
}

ModelResponse tool_call(std::string id, std::uint64_t input_tokens) {
  ModelResponse response = answer("", input_tokens, "tool_use");
  response.tool_calls.push_back(ToolCall{std::move(id), "missing_tool", json::object{}});
  return response;
}

class LongSessionTest : public ::testing::Test {
 protected:
  template <typename T>
  T wait(asio::awaitable<T> operation) {
    auto future = asio::co_spawn(io_, std::move(operation), asio::use_future);
    io_.restart();
    io_.run();
    return future.get();
  }
  std::shared_ptr<QueueProvider> provider_ = std::make_shared<QueueProvider>();
  asio::io_context io_;
  NoSteering context_;
  TurnRunnerSettings settings_{"system", 100, 100000, 1000, 0.5};
};

TEST_F(LongSessionTest, APausedTurnIsAskedAgainWithItsReplyInTheTranscript) {
  provider_->answers.push_back(answer("Part one.", 10, "pause_turn"));
  provider_->answers.push_back(answer("Part two."));
  ModelTurnRunner runner(provider_, nullptr, settings_);
  EXPECT_EQ(wait(runner.run_turn("go", context_)).reply, "Part two.");
  ASSERT_EQ(provider_->requests.size(), 2u);
  // The second request ends with the paused reply, not with a new user message.
  const auto& messages = provider_->requests[1].messages;
  EXPECT_EQ(messages.back().at("role"), "assistant");
  EXPECT_EQ(messages.back().at("content").as_array()[0].at("text"), "Part one.");
}

TEST_F(LongSessionTest, BelowTheShareNothingIsSummarised) {
  for (int turn = 0; turn < 3; ++turn) provider_->answers.push_back(answer("ok", 400));
  ModelTurnRunner runner(provider_, nullptr, settings_);
  for (int turn = 0; turn < 3; ++turn) wait(runner.run_turn("go", context_));
  EXPECT_EQ(runner.transcript().size(), 6u);
  for (const auto& request : provider_->requests) EXPECT_NE(request.purpose, Purpose::summary);
}

TEST_F(LongSessionTest, PastTheShareTheOlderHalfBecomesOneSummary) {
  ModelTurnRunner runner(provider_, nullptr, settings_);
  for (int turn = 0; turn < 3; ++turn) {
    provider_->answers.push_back(answer("reply " + std::to_string(turn), 100));
    wait(runner.run_turn("turn " + std::to_string(turn), context_));
  }
  provider_->answers.push_back(answer("big", 900));  // past 0.5 of 1000 tokens
  wait(runner.run_turn("turn 3", context_));
  const json::array& transcript = runner.transcript();
  // 8 messages: the first 4 summarised; the summary joins "turn 2", the first kept message.
  ASSERT_EQ(transcript.size(), 4u);
  const auto& opening = transcript[0].at("content").as_array();
  EXPECT_EQ(transcript[0].at("role"), "user");
  EXPECT_EQ(opening[0].at("text"), "Summary of the earlier part of this session:\nSUMMARY");
  EXPECT_NE(std::string(opening[1].at("text").as_string()).find("turn 2"), std::string::npos);
  EXPECT_EQ(transcript[1].at("role"), "assistant");
  ASSERT_EQ(context_.events.back().first, "SESSION_COMPACTED");
  EXPECT_EQ(context_.events.back().second.at("messages_summarised"), 4);
}

TEST_F(LongSessionTest, ACompactionNeverSeparatesAToolCallFromItsResult) {
  ModelTurnRunner runner(provider_, nullptr, settings_);
  // One long turn: tool call, result, tool call, result, ... then past the share.
  for (int round = 0; round < 4; ++round) provider_->answers.push_back(tool_call("c" + std::to_string(round), 100));
  provider_->answers.push_back(tool_call("c4", 900));
  provider_->answers.push_back(answer("done", 100));
  EXPECT_EQ(wait(runner.run_turn("long turn", context_)).reply, "done");
  const json::array& transcript = runner.transcript();
  // Every kept tool result answers a tool call that is still in the transcript.
  std::set<std::string> calls;
  for (const auto& message : transcript) {
    for (const auto& block : message.at("content").as_array()) {
      if (block.at("type") == "tool_use") calls.insert(std::string(block.at("id").as_string()));
      if (block.at("type") == "tool_result") {
        EXPECT_TRUE(calls.contains(std::string(block.at("tool_use_id").as_string())))
            << "a result lost its call: " << json::serialize(block);
      }
    }
  }
  EXPECT_EQ(transcript[0].at("role"), "user");
  bool compacted = false;
  for (const auto& [kind, data] : context_.events) compacted = compacted || kind == "SESSION_COMPACTED";
  EXPECT_TRUE(compacted);
}

TEST_F(LongSessionTest, AFailedCompactionLeavesTheSessionAsItWasAndTheNextTurnWorks) {
  provider_->fail_summaries = true;
  ModelTurnRunner runner(provider_, nullptr, settings_);
  provider_->answers.push_back(answer("earlier", 100));
  wait(runner.run_turn("turn 0", context_));
  // The tool call comes back past the share: the summary is asked for, and fails.
  provider_->answers.push_back(tool_call("c1", 900));
  provider_->answers.push_back(answer("done", 100));
  EXPECT_EQ(wait(runner.run_turn("turn 1", context_)).reply, "done");
  provider_->answers.push_back(answer("still working", 100));
  EXPECT_EQ(wait(runner.run_turn("turn 2", context_)).reply, "still working");

  bool failure_told = false;
  for (const auto& [kind, data] : context_.events) {
    EXPECT_NE(kind, "SESSION_COMPACTED");
    if (kind == "SESSION_COMPACTION_FAILED") {
      failure_told = true;
      EXPECT_NE(std::string(data.at("error").as_string()).find("529"), std::string::npos);
    }
  }
  EXPECT_TRUE(failure_told);
  for (const auto& request : provider_->requests) {
    if (request.purpose == Purpose::turn) expect_a_valid_session(request.messages);
  }
  // Nothing was summarised away: turn 0's messages are still the first two.
  EXPECT_EQ(runner.transcript()[0].at("content").as_array()[0].at("text"), "turn 0");
  expect_a_valid_session(runner.transcript());
}

TEST_F(LongSessionTest, ATurnThatFailsAfterAToolCallLeavesNoCallWithoutItsResult) {
  ModelTurnRunner runner(provider_, nullptr, settings_);
  provider_->answers.push_back(tool_call("c1", 100));
  // No answer after the tool round: the provider fails the turn's second request.
  EXPECT_THROW(wait(runner.run_turn("turn 1", context_)), std::runtime_error);
  provider_->answers.push_back(answer("recovered", 100));
  EXPECT_EQ(wait(runner.run_turn("turn 2", context_)).reply, "recovered");
  expect_a_valid_session(provider_->requests.back().messages);
  // The next turn's text joins the results the failed turn left: the sides still alternate.
  const json::array& last_user = provider_->requests.back().messages.back().at("content").as_array();
  EXPECT_EQ(last_user.front().at("type"), "tool_result");
  EXPECT_NE(std::string(last_user.back().at("text").as_string()).find("turn 2"), std::string::npos);
}

TEST_F(LongSessionTest, AResumedSessionEndingInAnUnansweredCallIsAnsweredFirst) {
  ModelTurnRunner runner(provider_, nullptr, settings_);
  json::array saved{json::object{{"role", "user"}, {"content", json::array{json::object{{"type", "text"}, {"text", "go"}}}}},
                    json::object{{"role", "assistant"},
                                 {"content", json::array{json::object{{"type", "tool_use"}, {"id", "c9"}, {"name", "bash"},
                                                                      {"input", json::object{}}}}}}};
  runner.resume_session(desk::Session{"s-1", "2026-11-30", "", saved});
  provider_->answers.push_back(answer("fine", 100));
  wait(runner.run_turn("again", context_));
  expect_a_valid_session(provider_->requests.back().messages);
}

ModelResponse uncounted(std::string text) {
  ModelResponse response = answer(std::move(text), 0);
  response.usage_reported = false;
  return response;
}

TEST_F(LongSessionTest, WithoutCountsAndWithEverySummaryFailingOlderMessagesAreDroppedNotTheTurns) {
  provider_->fail_summaries = true;
  ModelTurnRunner runner(provider_, nullptr, settings_);  // a window of 1,000 tokens: 4 KB
  for (int turn = 0; turn < 30; ++turn) {
    provider_->answers.push_back(uncounted("reply " + std::string(300, 'r')));
    const std::string message = "turn " + std::to_string(turn) + " " + std::string(300, 'm');
    wait(runner.run_turn(message, context_));
    EXPECT_LE(estimated_tokens(messages_bytes(runner.transcript())), 1000u) << "after turn " << turn;
    EXPECT_TRUE(holds_text(runner.transcript(), message)) << "turn " << turn << " lost its own message";
    expect_a_valid_session(runner.transcript());
  }
  for (const auto& request : provider_->requests) {
    if (request.purpose == Purpose::turn) {
      EXPECT_LE(estimated_tokens(messages_bytes(request.messages)), 1000u);
    }
  }
  bool dropped = false;
  for (const auto& [kind, data] : context_.events) {
    dropped = dropped || (kind == "SESSION_COMPACTED" && data.at("messages_dropped").to_number<std::uint64_t>() > 0);
  }
  EXPECT_TRUE(dropped);
}

TEST_F(LongSessionTest, ALongTurnThatSummarisesItsOwnMessageKeepsItWordForWord) {
  ModelTurnRunner runner(provider_, nullptr, settings_);
  for (int round = 0; round < 4; ++round) provider_->answers.push_back(tool_call("c" + std::to_string(round), 100));
  provider_->answers.push_back(tool_call("c4", 900));
  provider_->answers.push_back(answer("done", 100));
  EXPECT_EQ(wait(runner.run_turn("Rebalance the book to 40% cash.", context_)).reply, "done");
  // Put back beside the summary, a block of its own after its label: the cutting spares it
  // there, and the next compaction finds it rather than adding it again.
  EXPECT_TRUE(holds_text(runner.transcript(), "The request this turn works on:"));
  const json::array& opening = runner.transcript().front().as_object().at("content").as_array();
  std::size_t copies = 0;
  for (std::size_t index = 0; index + 1 < opening.size(); ++index) {
    if (opening[index].as_object().at("text") != "The request this turn works on:") continue;
    EXPECT_EQ(opening[index + 1].as_object().at("text"), "Rebalance the book to 40% cash.");
    ++copies;
  }
  EXPECT_EQ(copies, 1U);
  expect_a_valid_session(runner.transcript());
}

}  // namespace
}  // namespace deskd::model
