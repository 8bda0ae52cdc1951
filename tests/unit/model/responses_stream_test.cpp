// The Responses API's streams assembled (responses_recorded_streams.h names each
// fixture's source): a text reply cut by the network anywhere, a reasoning model's tool
// call whose reasoning item is kept to go back (without its id), usage with cached and
// reasoning tokens, a refusal and a reply cut inside a tool call (both billed), a text
// reply cut at max_output_tokens, a failed response, an error event, a stream cut early.

#include "runner/model/responses_stream.h"

#include <boost/json.hpp>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/unit/model/responses_recorded_streams.h"
#include "tests/unit/model/stream_test_support.h"

namespace deskd::model {
namespace {

namespace json = boost::json;
using testing::assemble;
using testing::failure_of;
using ::testing::HasSubstr;

constexpr std::string_view kService = "The OpenAI Responses API";

TEST(ResponsesStreamTest, TheSpecsTextStreamInAnyPieces) {
  for (std::size_t piece : {1u, 7u, 64u, 100000u}) {
    ResponsesStreamAssembler assembler(std::string(kService), 1024);
    const ModelResponse response = assemble(assembler, testing::kResponsesTextStream, piece);
    EXPECT_EQ(response.text, "Hi there! How can I assist you today?") << piece;
    EXPECT_EQ(response.stop_reason, "end_turn");
    EXPECT_EQ(response.model, "gpt-5.4");
    EXPECT_TRUE(response.tool_calls.empty());
    EXPECT_TRUE(response.content.empty()) << "no reasoning to pass back: the transcript is built from the text";
    EXPECT_TRUE(response.usage_reported);
    EXPECT_EQ(response.usage, (desk::Usage{37, 11, 0, 0}));
  }
}

TEST(ResponsesStreamTest, AToolCallKeepsItsReasoningItemToSendBack) {
  ResponsesStreamAssembler assembler(std::string(kService), 1024);
  const ModelResponse response = assemble(assembler, testing::kResponsesToolCallStream, 13);
  ASSERT_EQ(response.tool_calls.size(), 1u);
  EXPECT_EQ(response.tool_calls[0].id, "call_unLAR8MvFNptuiZK6K6HCy5k") << "the call_id, which the output answers";
  EXPECT_EQ(response.tool_calls[0].name, "bash");
  EXPECT_EQ(response.tool_calls[0].input, (json::object{{"command", "ls"}}));
  EXPECT_EQ(response.stop_reason, "tool_use");
  EXPECT_EQ(response.model, "o3-pro-2025-06-10");
  // 1200 input of which 1024 cached; the 256 reasoning tokens are among the 300 output.
  EXPECT_EQ(response.usage, (desk::Usage{176, 300, 1024, 0}));
  ASSERT_EQ(response.content.size(), 2u);
  EXPECT_EQ(
      response.content[0].as_object(),
      (json::object{
          {"type", kOpenAiReasoningBlock},
          {"item",
           {{"type", "reasoning"},
            {"summary", json::array{{{"type", "summary_text"},
                                     {"text", "**Listing the folder** The user wants the files; I will run ls."}}}},
            {"encrypted_content", "gAAAAABoSr2vENCRYPTEDREASONINGx9Q=="}}}}))
      << "no id: with store = false the API would look it up and not find it";
  EXPECT_EQ(response.content[1].as_object(), (json::object{{"type", "tool_use"},
                                                           {"id", "call_unLAR8MvFNptuiZK6K6HCy5k"},
                                                           {"name", "bash"},
                                                           {"input", {{"command", "ls"}}}}));
}

TEST(ResponsesStreamTest, ARefusalIsBilledAndMarked) {
  const auto failure =
      failure_of(ResponsesStreamAssembler(std::string(kService), 1024), testing::kResponsesRefusalStream);
  ASSERT_TRUE(failure);
  EXPECT_EQ(std::string(failure->what()),
            "The model refused to continue: I'm sorry, but I can't assist with that request.");
  EXPECT_TRUE(failure->refused());
  EXPECT_FALSE(failure->retryable());
  ASSERT_TRUE(failure->billed());
  EXPECT_EQ(failure->billed()->usage, (desk::Usage{17, 12, 0, 0}));
  EXPECT_TRUE(failure->billed()->usage_reported);
  EXPECT_EQ(failure->billed()->model, "gpt-5.4");
}

TEST(ResponsesStreamTest, AContentFilterStopIsARefusal) {
  std::string wire(testing::kResponsesCutTextStream);
  wire.replace(wire.find("max_output_tokens"), std::string_view("max_output_tokens").size(), "content_filter");
  const auto failure = failure_of(ResponsesStreamAssembler(std::string(kService), 1024), wire);
  ASSERT_TRUE(failure);
  EXPECT_THAT(failure->what(), HasSubstr("content filter"));
  EXPECT_TRUE(failure->refused());
  ASSERT_TRUE(failure->billed());
  EXPECT_EQ(failure->billed()->usage.output_tokens, 16u);
}

TEST(ResponsesStreamTest, AReplyCutInsideAToolCallIsBilledAndNamesMaxTokens) {
  const auto failure =
      failure_of(ResponsesStreamAssembler(std::string(kService), 64), testing::kResponsesCutToolCallStream);
  ASSERT_TRUE(failure);
  EXPECT_THAT(failure->what(), HasSubstr("cut at max_tokens (64) in the middle of a tool call (write_file)"));
  EXPECT_FALSE(failure->refused());
  ASSERT_TRUE(failure->billed());
  EXPECT_EQ(failure->billed()->usage, (desk::Usage{900, 64, 0, 0}));
}

TEST(ResponsesStreamTest, ATextReplyCutAtItsLimitIsACutReply) {
  ResponsesStreamAssembler assembler(std::string(kService), 16);
  const ModelResponse response = assemble(assembler, testing::kResponsesCutTextStream, 5);
  EXPECT_EQ(response.text, "The plan has three par");
  EXPECT_EQ(response.stop_reason, "max_tokens");
  EXPECT_TRUE(is_cut_reply(response.stop_reason));
}

TEST(ResponsesStreamTest, AFailedResponseIsRetriedOnAServerError) {
  const auto failure =
      failure_of(ResponsesStreamAssembler(std::string(kService), 1024), testing::kResponsesFailedStream);
  ASSERT_TRUE(failure);
  EXPECT_THAT(failure->what(), HasSubstr("The model failed to generate a response."));
  EXPECT_TRUE(failure->retryable()) << "server_error";
  EXPECT_FALSE(failure->billed());
}

TEST(ResponsesStreamTest, AnErrorEventSaysWhatTheApiSaid) {
  const auto failure =
      failure_of(ResponsesStreamAssembler(std::string(kService), 1024), testing::kResponsesErrorStream);
  ASSERT_TRUE(failure);
  EXPECT_EQ(
      std::string(failure->what()),
      "The OpenAI Responses API reported an error in the middle of its reply (ERR_SOMETHING): Something went wrong.");
  EXPECT_FALSE(failure->retryable());
}

TEST(ResponsesStreamTest, AStreamCutBeforeItsClosingEventIsRetried) {
  std::string wire(testing::kResponsesTextStream);
  wire.resize(wire.find("event: response.completed"));
  const auto failure = failure_of(ResponsesStreamAssembler(std::string(kService), 1024), wire);
  ASSERT_TRUE(failure);
  EXPECT_THAT(failure->what(), HasSubstr("ended before response.completed"));
  EXPECT_TRUE(failure->retryable());
}

TEST(ResponsesStreamTest, AServerNamingEndlessItemsIsStopped) {
  std::string wire;
  for (int index = 0; index < 5000; ++index) {
    wire += R"(data: {"type":"response.output_text.delta","output_index":)" + std::to_string(index) +
            R"(,"delta":""})"
            "\n\n";
  }
  const auto failure = failure_of(ResponsesStreamAssembler(std::string(kService), 1024), wire);
  ASSERT_TRUE(failure);
  EXPECT_THAT(failure->what(), HasSubstr("more than 4096 output items"));
}

TEST(ResponsesStreamTest, TextOfAnItemNeverAnnouncedIsStillTheReply) {
  std::string wire(testing::kResponsesCutTextStream);
  wire.erase(0, wire.find("event: response.output_text.delta"));
  ResponsesStreamAssembler assembler(std::string(kService), 16);
  EXPECT_EQ(assemble(assembler, wire, 9).text, "The plan has three par");
}

TEST(ResponsesStreamTest, AnEventThatIsNotJsonIsMalformed) {
  const auto failure =
      failure_of(ResponsesStreamAssembler(std::string(kService), 1024), "event: response.created\ndata: {not json\n\n");
  ASSERT_TRUE(failure);
  EXPECT_THAT(failure->what(), HasSubstr("malformed event"));
}

}  // namespace
}  // namespace deskd::model
