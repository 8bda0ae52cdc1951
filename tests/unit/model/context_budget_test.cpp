// The token estimate behind compaction when a server does not count (or under-counts), and
// the cutting of the longest texts that bounds a session when summarising cannot.

#include "runner/model/context_budget.h"

#include <boost/json.hpp>

#include <gtest/gtest.h>

namespace deskd::model {
namespace {

namespace json = boost::json;

ModelResponse reporting(std::uint64_t input_tokens, bool reported = true) {
  ModelResponse response;
  response.usage.input_tokens = input_tokens;
  response.usage_reported = reported;
  return response;
}

json::object user_text(std::string text) {
  return {{"role", "user"}, {"content", json::array{json::object{{"type", "text"}, {"text", std::move(text)}}}}};
}

TEST(ContextBudgetTest, NoCountMeansTheEstimate) {
  const InputCount count = counted_input(reporting(0, false), estimated_tokens(50000));
  EXPECT_EQ(count.tokens, 12500u);
  EXPECT_TRUE(count.estimated);
}

TEST(ContextBudgetTest, TenTokensForFiftyKilobytesIsNotBelieved) {
  const InputCount count = counted_input(reporting(10), estimated_tokens(50000));
  EXPECT_EQ(count.tokens, 12500u);
  EXPECT_TRUE(count.estimated);
}

TEST(ContextBudgetTest, APlausibleCountIsTheServersEvenBelowTheEstimate) {
  // 50 KB in 8,000 tokens is 6.25 bytes a token: dense, but a tokenizer may do it.
  const InputCount count = counted_input(reporting(8000), estimated_tokens(50000));
  EXPECT_EQ(count.tokens, 8000u);
  EXPECT_FALSE(count.estimated);
  // Cache tokens are input too.
  ModelResponse cached = reporting(100);
  cached.usage.cache_read_tokens = 9000;
  EXPECT_FALSE(counted_input(cached, estimated_tokens(50000)).estimated);
}

TEST(ContextBudgetTest, TheLongestTextIsCutFirstKeepingItsStartAndEnd) {
  json::array messages{user_text("short question"),
                       json::object{{"role", "assistant"},
                                    {"content", json::array{json::object{{"type", "tool_use"}, {"id", "t1"}, {"name", "bash"},
                                                                         {"input", {{"command", "cat log"}}}}}}},
                       json::object{{"role", "user"},
                                    {"content", json::array{json::object{{"type", "tool_result"}, {"tool_use_id", "t1"},
                                                                         {"content", "START" + std::string(50000, 'x') + "END"}}}}}};
  EXPECT_EQ(cut_longest_texts(messages, 10000, 500), 1u);
  EXPECT_LE(messages_bytes(messages), 10000u);
  const std::string result(messages[2].at("content").at(0).at("content").as_string());
  EXPECT_TRUE(result.starts_with("START"));
  EXPECT_TRUE(result.ends_with("END"));
  EXPECT_NE(result.find("deskd cut"), std::string::npos);
  EXPECT_EQ(messages[0].at("content").at(0).at("text"), "short question");  // untouched
  EXPECT_TRUE(holds_text(messages, "short question"));
}

TEST(ContextBudgetTest, CuttingStopsAtTheFloorAndLeavesThinkingAlone) {
  json::array messages{user_text(std::string(3000, 'a')),
                       json::object{{"role", "assistant"},
                                    {"content", json::array{json::object{{"type", "thinking"}, {"thinking", std::string(3000, 't')},
                                                                         {"signature", "sig"}}}}}};
  (void)cut_longest_texts(messages, 100, 1000);
  EXPECT_GT(messages_bytes(messages), 100u);  // nothing left to cut: it says so by its size
  EXPECT_EQ(messages[1].at("content").at(0).at("thinking").as_string().size(), 3000u);
  EXPECT_LT(messages[0].at("content").at(0).at("text").as_string().size(), 1200u);
}

TEST(ContextBudgetTest, CutTextsStayWholeCharacters) {
  std::string text;
  for (int index = 0; index < 5000; ++index) text += "ü";
  json::array messages{user_text(text)};
  (void)cut_longest_texts(messages, 3001, 0);
  boost::system::error_code error;
  (void)json::parse(json::serialize(messages), error);
  EXPECT_FALSE(error);
  const std::string cut(messages[0].at("content").at(0).at("text").as_string());
  EXPECT_EQ(cut.find("\xC3\n"), std::string::npos);
}

}  // namespace
}  // namespace deskd::model
