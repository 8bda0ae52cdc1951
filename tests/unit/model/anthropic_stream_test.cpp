// The Anthropic provider without a network: the request body, the streamed reply put
// together from events cut anywhere, and every way a stream or an error body can go wrong.

#include "runner/model/anthropic_stream.h"

#include <boost/json.hpp>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "runner/model/anthropic_provider.h"
#include "tests/unit/model/stream_test_support.h"

namespace deskd::model {
namespace {

namespace json = boost::json;
using ::testing::HasSubstr;
using testing::assemble;
using testing::failure_of;
using testing::sse;

std::string message_start(std::string_view model = "claude-sonnet-4-5-20250929") {
  return sse("message_start", R"({"type":"message_start","message":{"id":"msg_01","type":"message","role":"assistant","model":")" +
                                  std::string(model) +
                                  R"(","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":472,"cache_creation_input_tokens":1200,"cache_read_input_tokens":3000,"output_tokens":2}}})");
}
std::string text_start(int index) {
  return sse("content_block_start", R"({"type":"content_block_start","index":)" + std::to_string(index) +
                                        R"(,"content_block":{"type":"text","text":""}})");
}
std::string text_delta(int index, std::string_view text) {
  return sse("content_block_delta", R"({"type":"content_block_delta","index":)" + std::to_string(index) +
                                        R"(,"delta":{"type":"text_delta","text":)" + json::serialize(json::string(text)) + "}}");
}
std::string tool_start(int index, std::string_view id, std::string_view name) {
  return sse("content_block_start", R"({"type":"content_block_start","index":)" + std::to_string(index) +
                                        R"(,"content_block":{"type":"tool_use","id":")" + std::string(id) + R"(","name":")" +
                                        std::string(name) + R"(","input":{}}})");
}
std::string json_delta(int index, std::string_view piece) {
  return sse("content_block_delta", R"({"type":"content_block_delta","index":)" + std::to_string(index) +
                                        R"(,"delta":{"type":"input_json_delta","partial_json":)" +
                                        json::serialize(json::string(piece)) + "}}");
}
std::string block_stop(int index) {
  return sse("content_block_stop", R"({"type":"content_block_stop","index":)" + std::to_string(index) + "}");
}
std::string message_delta(std::string_view stop_reason, int output_tokens = 89) {
  return sse("message_delta", R"({"type":"message_delta","delta":{"stop_reason":")" + std::string(stop_reason) +
                                  R"(","stop_sequence":null},"usage":{"output_tokens":)" + std::to_string(output_tokens) + "}}");
}
std::string message_stop() { return sse("message_stop", R"({"type":"message_stop"})"); }
std::string ping() { return sse("ping", R"({"type": "ping"})"); }

std::string text_reply(std::string_view stop_reason) {
  return message_start() + text_start(0) + ping() + text_delta(0, "Nifty closed ") + text_delta(0, "at 24150.") + block_stop(0) +
         message_delta(stop_reason) + message_stop();
}

TEST(AnthropicStreamTest, ATextReplyWithUsageAndModelInAnyPieces) {
  const std::string wire = text_reply("end_turn");
  for (std::size_t piece : {1u, 2u, 7u, 64u, 100000u}) {
    AnthropicStreamAssembler assembler(4096);
    const ModelResponse response = assemble(assembler, wire, piece);
    EXPECT_EQ(response.text, "Nifty closed at 24150.") << piece;
    EXPECT_EQ(response.model, "claude-sonnet-4-5-20250929");
    EXPECT_EQ(response.stop_reason, "end_turn");
    EXPECT_EQ(response.usage, (desk::Usage{472, 89, 3000, 1200}));
    EXPECT_TRUE(response.tool_calls.empty());
  }
}

TEST(AnthropicStreamTest, SeveralToolCallsWithInputSplitMidToken) {
  const std::string wire = message_start() + text_start(0) + text_delta(0, "Two looks.") + block_stop(0) +
                           tool_start(1, "toolu_01", "bash") + json_delta(1, "") + json_delta(1, R"({"comm)") +
                           json_delta(1, R"(and": "ls -la\)") + json_delta(1, R"(nwc -l", "time)") +
                           json_delta(1, R"(out": 1)") + json_delta(1, R"(2.5e1})") + block_stop(1) +
                           tool_start(2, "toolu_02", "read_file") + json_delta(2, R"({"path": "pl)") +
                           json_delta(2, R"(an.md"})") + block_stop(2) + tool_start(3, "toolu_03", "market_status") +
                           block_stop(3) + message_delta("tool_use") + message_stop();
  for (std::size_t piece : {1u, 5u, 100000u}) {
    AnthropicStreamAssembler assembler(4096);
    const ModelResponse response = assemble(assembler, wire, piece);
    EXPECT_EQ(response.text, "Two looks.");
    EXPECT_EQ(response.stop_reason, "tool_use");
    ASSERT_EQ(response.tool_calls.size(), 3u);
    EXPECT_EQ(response.tool_calls[0].id, "toolu_01");
    EXPECT_EQ(response.tool_calls[0].name, "bash");
    EXPECT_EQ(response.tool_calls[0].input, (json::object{{"command", "ls -la\nwc -l"}, {"timeout", 125.0}}));
    EXPECT_EQ(response.tool_calls[1].input, (json::object{{"path", "plan.md"}}));
    EXPECT_EQ(response.tool_calls[2].name, "market_status");
    EXPECT_EQ(response.tool_calls[2].input, json::object{}) << "a tool without input gets {}";
  }
}

TEST(AnthropicStreamTest, EveryStopReasonIsKept) {
  for (const char* reason : {"end_turn", "tool_use", "stop_sequence", "pause_turn", "max_tokens"}) {
    AnthropicStreamAssembler assembler(4096);
    const ModelResponse response = assemble(assembler, text_reply(reason), 100000);
    EXPECT_EQ(response.stop_reason, reason);
    EXPECT_EQ(response.text, "Nifty closed at 24150.") << "max_tokens keeps the text it cut";
  }
}

TEST(AnthropicStreamTest, AToolCallCutByMaxTokensIsAnError) {
  const std::string wire = message_start() + tool_start(0, "toolu_01", "write_file") +
                           json_delta(0, R"({"path": "notes.md", "content": "# To)") + block_stop(0) +
                           message_delta("max_tokens") + message_stop();
  const auto failure = failure_of(AnthropicStreamAssembler(1024), wire);
  ASSERT_TRUE(failure);
  EXPECT_THAT(failure->what(), HasSubstr("The reply was cut at max_tokens (1024) in the middle of a tool call (write_file)"));
  EXPECT_FALSE(failure->retryable());
}

TEST(AnthropicStreamTest, ToolInputThatIsNotJsonNamesTheTool) {
  const std::string wire = message_start() + tool_start(0, "toolu_01", "bash") + json_delta(0, R"({"command": )") +
                           block_stop(0) + message_delta("tool_use") + message_stop();
  const auto failure = failure_of(AnthropicStreamAssembler(1024), wire);
  ASSERT_TRUE(failure);
  EXPECT_THAT(failure->what(), HasSubstr("The model's input for the tool \"bash\" is not usable"));
}

TEST(AnthropicStreamTest, ARefusalIsAnErrorThatIsNotRetried) {
  const auto failure = failure_of(AnthropicStreamAssembler(1024), text_reply("refusal"));
  ASSERT_TRUE(failure);
  EXPECT_THAT(failure->what(), HasSubstr("The model refused to continue: Nifty closed at 24150."));
  EXPECT_FALSE(failure->retryable());
}

TEST(AnthropicStreamTest, AMalformedEventIsNamed) {
  const std::string wire = message_start() + text_start(0) +
                           sse("content_block_delta", R"({"type":"content_block_delta","index":0,"delta":{"type":"text_del)") +
                           message_stop();
  const auto failure = failure_of(AnthropicStreamAssembler(1024), wire);
  ASSERT_TRUE(failure);
  EXPECT_THAT(failure->what(), HasSubstr("malformed \"content_block_delta\" event"));
  EXPECT_FALSE(failure->retryable());
}

// A block of a type deskd does not know no longer fails the turn (anthropic_thinking_test.cpp
// has the recorded streams); a block without any type is still a malformed event.
TEST(AnthropicStreamTest, ABlockWithoutATypeIsMalformed) {
  const std::string wire = message_start() +
                           sse("content_block_start", R"({"type":"content_block_start","index":0,"content_block":{"thinking":""}})") +
                           message_stop();
  const auto failure = failure_of(AnthropicStreamAssembler(1024), wire);
  ASSERT_TRUE(failure);
  EXPECT_THAT(failure->what(), HasSubstr("malformed \"content_block_start\" event: its content block has no \"type\""));
}

TEST(AnthropicStreamTest, ADeltaForABlockThatNeverStarted) {
  const auto failure = failure_of(AnthropicStreamAssembler(1024), message_start() + text_delta(4, "hi") + message_stop());
  ASSERT_TRUE(failure);
  EXPECT_THAT(failure->what(), HasSubstr("block 4 never started"));
}

TEST(AnthropicStreamTest, UnknownEventTypesArePassedOver) {
  const std::string wire = message_start() + sse("future_event", R"({"type":"future_event","x":1})") + text_start(0) +
                           text_delta(0, "ok") + block_stop(0) + message_delta("end_turn") + message_stop();
  AnthropicStreamAssembler assembler(1024);
  EXPECT_EQ(assemble(assembler, wire, 100000).text, "ok");
}

TEST(AnthropicStreamTest, AStreamCutBeforeMessageStopIsRetryable) {
  const std::string full = text_reply("end_turn");
  const std::string cut = full.substr(0, full.find("event: message_delta"));
  const auto failure = failure_of(AnthropicStreamAssembler(1024), cut);
  ASSERT_TRUE(failure);
  EXPECT_THAT(failure->what(), HasSubstr("ended before message_stop"));
  EXPECT_TRUE(failure->retryable());
}

TEST(AnthropicStreamTest, ErrorEvents) {
  const auto overloaded = failure_of(AnthropicStreamAssembler(1024),
                                     message_start() + text_start(0) +
                                         sse("error", R"({"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}})"));
  ASSERT_TRUE(overloaded);
  EXPECT_TRUE(overloaded->retryable());
  EXPECT_THAT(overloaded->what(), HasSubstr("(overloaded_error): Overloaded."));

  const auto invalid = failure_of(AnthropicStreamAssembler(1024),
                                  sse("error", R"({"type":"error","error":{"type":"invalid_request_error","message":"Bad tool schema"}})"));
  ASSERT_TRUE(invalid);
  EXPECT_FALSE(invalid->retryable());
  EXPECT_THAT(invalid->what(), HasSubstr("Bad tool schema"));
}

ApiDialect anthropic_dialect() { return {std::string(kAnthropicService), "request-id", read_anthropic_error_body}; }

TEST(AnthropicErrorTest, AnErrorStatusCarriesTheApisMessage) {
  const ProviderError bad_key = error_for_status(
      anthropic_dialect(), 401, R"({"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}})",
      std::nullopt, std::nullopt, "req_011");
  EXPECT_EQ(std::string(bad_key.what()),
            "The Anthropic API answered HTTP 401 (authentication_error): invalid x-api-key. Check the API key in the desk's "
            "model settings. (request id req_011)");
  EXPECT_FALSE(bad_key.retryable());

  const ProviderError overloaded = error_for_status(
      anthropic_dialect(), 529, R"({"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}})",
      std::chrono::milliseconds(1000), std::nullopt, std::nullopt);
  EXPECT_TRUE(overloaded.retryable());
  EXPECT_EQ(overloaded.retry_after(), std::chrono::milliseconds(1000));

  const ProviderError proxy = error_for_status(anthropic_dialect(), 502, "<html>\n<b>Bad gateway</b></html>", std::nullopt,
                                               std::nullopt, std::nullopt);
  EXPECT_THAT(proxy.what(), HasSubstr("HTTP 502: <html> <b>Bad gateway</b></html>"));
  EXPECT_TRUE(proxy.retryable());

  EXPECT_FALSE(error_for_status(anthropic_dialect(), 500, "", std::nullopt, "false", std::nullopt).retryable())
      << "x-should-retry: false has the last word";
  EXPECT_TRUE(error_for_status(anthropic_dialect(), 409, "", std::nullopt, "true", std::nullopt).retryable());
}

TEST(AnthropicErrorTest, APromptTooLongSaysTheContextWindowIsFull) {
  const ProviderError error = error_for_status(
      anthropic_dialect(), 400,
      R"({"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 208310 tokens > 200000 maximum"}})",
      std::nullopt, std::nullopt, std::nullopt);
  EXPECT_THAT(error.what(), HasSubstr("The conversation no longer fits the model's context window"));
  EXPECT_THAT(error.what(), HasSubstr("prompt is too long: 208310 tokens > 200000 maximum"));
  EXPECT_FALSE(error.retryable());
}

ModelRequest request_with_history(Purpose purpose) {
  ModelRequest request;
  request.system = "You are a trading desk.";
  request.purpose = purpose;
  request.tools.push_back({"bash", "Runs a command.", json::object{{"type", "object"}}});
  request.tools.push_back({"read_file", "Reads a file.", json::object{{"type", "object"}}});
  request.messages = json::parse(R"([
    {"role": "user", "content": [{"type": "text", "text": "Look around."}]},
    {"role": "assistant", "content": [{"type": "text", "text": "Looking."},
                                       {"type": "tool_use", "id": "toolu_1", "name": "bash", "input": {"command": "ls"}}]},
    {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "plan.md", "is_error": false},
                                  {"type": "text", "text": "Message from the user while you worked: hurry"}]},
    {"role": "assistant", "content": []},
    {"role": "user", "content": [{"type": "text", "text": "Again."}]}
  ])").as_array();
  return request;
}

TEST(AnthropicRequestTest, TheBodyCarriesModelSystemToolsAndTheMessages) {
  ProviderSettings settings;
  settings.model = "claude-sonnet-4-5";
  settings.max_tokens = 2048;
  const json::object body = anthropic_request_body(request_with_history(Purpose::turn), settings);
  EXPECT_EQ(body.at("model"), "claude-sonnet-4-5");
  EXPECT_EQ(body.at("max_tokens"), 2048);
  EXPECT_EQ(body.at("stream"), true);
  EXPECT_FALSE(body.contains("temperature"));
  EXPECT_EQ(body.at("system").at(0).at("text"), "You are a trading desk.");
  EXPECT_EQ(body.at("system").at(0).at("cache_control").at("type"), "ephemeral");
  const json::array& tools = body.at("tools").as_array();
  ASSERT_EQ(tools.size(), 2u);
  EXPECT_EQ(tools[0].at("name"), "bash");
  EXPECT_EQ(tools[0].at("description"), "Runs a command.");
  EXPECT_EQ(tools[0].at("input_schema"), (json::object{{"type", "object"}}));
  EXPECT_FALSE(tools[0].as_object().contains("cache_control"));
  EXPECT_TRUE(tools[1].as_object().contains("cache_control"));
  const json::array& messages = body.at("messages").as_array();
  ASSERT_EQ(messages.size(), 5u);
  EXPECT_EQ(messages[2].at("content").at(0).at("type"), "tool_result");
  EXPECT_EQ(messages[2].at("content").at(1).at("text"), "Message from the user while you worked: hurry");
  EXPECT_EQ(messages[3].at("content").at(0).at("text"), "(no reply)") << "the API refuses an empty message in the middle";
  EXPECT_EQ(messages[4].at("content").at(0).at("cache_control").at("type"), "ephemeral");
  EXPECT_FALSE(messages[2].at("content").at(1).as_object().contains("cache_control"));

  settings.temperature = 0.25;
  EXPECT_EQ(anthropic_request_body(request_with_history(Purpose::turn), settings).at("temperature"), 0.25);
}

TEST(AnthropicRequestTest, SideQuestionsAndSummariesSendNoToolsAndToolBlocksAsText) {
  ProviderSettings settings;
  settings.model = "claude-sonnet-4-5";
  for (Purpose purpose : {Purpose::side_question, Purpose::summary}) {
    const json::object body = anthropic_request_body(request_with_history(purpose), settings);
    EXPECT_FALSE(body.contains("tools"));
    const std::string sent = json::serialize(body.at("messages"));
    EXPECT_EQ(sent.find("tool_use"), std::string::npos) << sent;
    EXPECT_EQ(sent.find("tool_result"), std::string::npos) << sent;
    EXPECT_EQ(body.at("messages").at(1).at("content").at(1).at("text"), R"([I called bash with {"command":"ls"}])");
    EXPECT_EQ(body.at("messages").at(2).at("content").at(0).at("text"), "[bash answered: plan.md]");
  }
}

}  // namespace
}  // namespace deskd::model
