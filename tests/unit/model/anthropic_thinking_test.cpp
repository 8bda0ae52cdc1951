// The Anthropic provider against recorded streams of the live Messages API beyond text and
// tool_use: extended thinking (thinking_delta, signature_delta), redacted_thinking, server
// tool blocks, blocks of types deskd does not know, refusals with the API's explanation, and
// replies cut by max_tokens or the context window; and the requests that carry thinking back.
// The fixtures, each naming where its wire text comes from, are in anthropic_recorded_streams.h.

#include <boost/asio.hpp>
#include <boost/json.hpp>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "runner/model/anthropic_provider.h"
#include "runner/model/anthropic_stream.h"
#include "runner/model/model_turn_runner.h"
#include "runner/tools/tool_registry.h"
#include "tests/unit/model/anthropic_recorded_streams.h"
#include "tests/unit/model/fake_http_server.h"
#include "tests/unit/model/provider_test_support.h"
#include "tests/unit/model/request_shape.h"
#include "tests/unit/model/stream_test_support.h"
#include "tests/unit/model/run_awaitable.h"

namespace deskd::model {
namespace {

namespace asio = boost::asio;
namespace json = boost::json;
using ::testing::HasSubstr;
using testing::assemble;
using testing::failure_of;
using testing::JsonKind;

using testing::cut_reply;
using testing::kDocsThinkingStream;
using testing::kRedactedThinkingStream;
using testing::kRefusalStream;
using testing::kServerToolResultStream;
using testing::kServerToolUseStream;
using testing::thinking_then_tool_use;

TEST(AnthropicThinkingStreamTest, TheDocsThinkingStreamKeepsThinkingAndSignatureInAnyPieces) {
  for (std::size_t piece : {1u, 7u, 100000u}) {
    AnthropicStreamAssembler assembler(16000);
    const ModelResponse response = assemble(assembler, kDocsThinkingStream, piece);
    EXPECT_EQ(response.text, "27 * 453 = 12,231") << "thinking is not the reply";
    EXPECT_EQ(response.stop_reason, "end_turn");
    EXPECT_FALSE(response.usage_reported) << "the docs' example carries no usage";
    const json::array expected = json::parse(R"([
      {"type": "thinking", "thinking": "Let me solve this step by step:\n\n1. First break down 27 * 453\n2. 453 = 400 + 50 + 3",
       "signature": "EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds..."},
      {"type": "text", "text": "27 * 453 = 12,231"}])").as_array();
    EXPECT_EQ(response.content, expected) << piece;
  }
}

TEST(AnthropicThinkingStreamTest, ThinkingBeforeAToolCallStaysFirst) {
  AnthropicStreamAssembler assembler(16000);
  const ModelResponse response = assemble(assembler, thinking_then_tool_use(), 3);
  ASSERT_EQ(response.tool_calls.size(), 1u);
  EXPECT_EQ(response.tool_calls[0].input, (json::object{{"command", "curl -s wttr.in/Paris"}}));
  ASSERT_EQ(response.content.size(), 2u);
  EXPECT_EQ(response.content[0].at("type"), "thinking");
  EXPECT_EQ(response.content[0].at("signature"), "EuYBCkQYAiJAgCs1le6/Pol5Z4/JMomVOouGrWdhYNsH3ukzUECbB6iWrSQtsQuRHJID6lWV");
  EXPECT_EQ(response.content[1], (json::object{{"type", "tool_use"}, {"id", "toolu_01CswdEQBMshySk6Y9DFKrfq"},
                                               {"name", "bash"}, {"input", {{"command", "curl -s wttr.in/Paris"}}}}));
  EXPECT_TRUE(response.usage_reported);
  EXPECT_EQ(response.usage, (desk::Usage{400, 89, 0, 0}));
}

TEST(AnthropicThinkingStreamTest, RedactedThinkingIsKeptAsSent) {
  AnthropicStreamAssembler assembler(4096);
  const ModelResponse response = assemble(assembler, kRedactedThinkingStream, 11);
  EXPECT_EQ(response.text, "I can't share my reasoning here, but the answer is 42.");
  ASSERT_EQ(response.content.size(), 2u);
  EXPECT_EQ(response.content[0].at("type"), "redacted_thinking");
  EXPECT_THAT(std::string(response.content[0].at("data").as_string()), ::testing::StartsWith("EmwKAhgBEgy3va3pzix"));
  EXPECT_EQ(response.content[0].as_object().size(), 2u) << "nothing added to what the API sent";
}

TEST(AnthropicThinkingStreamTest, ServerToolBlocksAreKeptAndDoNotFailTheTurn) {
  AnthropicStreamAssembler first(4096);
  const ModelResponse searched = assemble(first, kServerToolUseStream, 5);
  EXPECT_EQ(searched.text, "Let me search for that.");
  EXPECT_TRUE(searched.tool_calls.empty()) << "a server tool is the API's to run, not deskd's";
  ASSERT_EQ(searched.content.size(), 2u);
  EXPECT_EQ(searched.content[1], (json::object{{"type", "server_tool_use"}, {"id", "srvtoolu_01WebSearch"},
                                               {"name", "web_search"}, {"input", {{"query", "weather in Paris"}}}}));

  AnthropicStreamAssembler second(4096);
  const ModelResponse results = assemble(second, kServerToolResultStream, 100000);
  ASSERT_EQ(results.tool_calls.size(), 1u);
  EXPECT_EQ(results.tool_calls[0].name, "ask_internal_tool");
  EXPECT_EQ(results.tool_calls[0].input, (json::object{{"query", "test"}}));
  ASSERT_EQ(results.content.size(), 4u);
  EXPECT_EQ(results.content[0].at("type"), "server_tool_use");
  EXPECT_EQ(results.content[1].at("type"), "tool_use");
  EXPECT_EQ(results.content[2].at("type"), "web_search_tool_result");
  EXPECT_EQ(results.content[2].at("content").at(0).at("encrypted_content"), "enc_abc123");
  EXPECT_EQ(results.content[3].at("type"), "code_execution_tool_result");
}

TEST(AnthropicThinkingStreamTest, AnUnknownBlockIsKeptOrLeftOutButNeverFailsTheTurn) {
  const std::string start = R"(event: message_start
data: {"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"claude-future","content":[],"usage":{"input_tokens":5,"output_tokens":1}}}

)";
  const std::string end = R"(event: message_delta
data: {"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":9}}

event: message_stop
data: {"type":"message_stop"}

)";
  const std::string whole_block = R"(event: content_block_start
data: {"type":"content_block_start","index":0,"content_block":{"type":"hologram","payload":{"x":1}}}

event: content_block_stop
data: {"type":"content_block_stop","index":0}

)";
  const std::string changed_block = R"(event: content_block_start
data: {"type":"content_block_start","index":1,"content_block":{"type":"hologram","payload":{}}}

event: content_block_delta
data: {"type":"content_block_delta","index":1,"delta":{"type":"hologram_delta","more":"y"}}

event: content_block_stop
data: {"type":"content_block_stop","index":1}

event: content_block_start
data: {"type":"content_block_start","index":2,"content_block":{"type":"text","text":"Done."}}

event: content_block_delta
data: {"type":"content_block_delta","index":2,"delta":{"type":"citations_delta","citation":{"type":"char_location"}}}

event: content_block_stop
data: {"type":"content_block_stop","index":2}

)";
  AnthropicStreamAssembler assembler(4096);
  const ModelResponse response = assemble(assembler, start + whole_block + changed_block + end, 100000);
  EXPECT_EQ(response.text, "Done.");
  const json::array expected = json::parse(R"([{"type":"hologram","payload":{"x":1}}, {"type":"text","text":"Done."}])").as_array();
  EXPECT_EQ(response.content, expected) << "the block changed by an unknown delta is left out";
}

TEST(AnthropicThinkingStreamTest, AThinkingBlockCutBeforeItsSignatureIsLeftOut) {
  const std::string full(kDocsThinkingStream);
  std::string wire = full.substr(0, full.find("event: content_block_delta\ndata: {\"type\": \"content_block_delta\", \"index\": 0, \"delta\": {\"type\": \"signature_delta\""));
  wire += R"(event: message_delta
data: {"type": "message_delta", "delta": {"stop_reason": "max_tokens", "stop_sequence": null}}

event: message_stop
data: {"type": "message_stop"}

)";
  AnthropicStreamAssembler assembler(2048);
  const ModelResponse response = assemble(assembler, wire, 100000);
  EXPECT_EQ(response.stop_reason, "max_tokens");
  EXPECT_TRUE(is_cut_reply(response.stop_reason));
  EXPECT_TRUE(response.content.empty()) << json::serialize(response.content);
}

TEST(AnthropicThinkingStreamTest, ARefusalKeepsTheApisExplanation) {
  const auto failure = failure_of(AnthropicStreamAssembler(1024), kRefusalStream);
  ASSERT_TRUE(failure);
  EXPECT_EQ(std::string(failure->what()), "The model refused to continue: This request was refused due to policy.");
  EXPECT_FALSE(failure->retryable());
}

TEST(AnthropicThinkingStreamTest, ARefusalWithWordsQuotesThemWhole) {
  std::string wire(kRefusalStream);
  const std::string long_words(1500, 'w');
  const std::string empty_block_stop = "event: content_block_stop";
  wire.insert(wire.find(empty_block_stop),
              "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\","
              "\"text\":\"I won't help with that: " + long_words + "\"}}\n\n");
  const auto failure = failure_of(AnthropicStreamAssembler(1024), wire);
  ASSERT_TRUE(failure);
  EXPECT_THAT(failure->what(), HasSubstr("I won't help with that: " + long_words + " (This request was refused due to policy.)"));
}

TEST(AnthropicThinkingStreamTest, RepliesCutByMaxTokensOrTheContextWindowSaySo) {
  for (const char* reason : {"max_tokens", "model_context_window_exceeded"}) {
    AnthropicStreamAssembler assembler(1000);
    const ModelResponse response = assemble(assembler, cut_reply(reason), 9);
    EXPECT_EQ(response.stop_reason, reason);
    EXPECT_TRUE(is_cut_reply(response.stop_reason));
    EXPECT_EQ(response.text, "The levels for today are: pivot 24150, support");
  }
  EXPECT_FALSE(is_cut_reply("end_turn"));
  EXPECT_FALSE(is_cut_reply("pause_turn"));
}

TEST(AnthropicThinkingStreamTest, AToolCallCutByTheContextWindowIsNamed) {
  std::string wire = thinking_then_tool_use();
  wire.replace(wire.find("{\\\"command\\\": \\\"curl -s wttr.in/Paris\\\"}"), std::string("{\\\"command\\\": \\\"curl -s wttr.in/Paris\\\"}").size(),
               "{\\\"command\\\": \\\"cur");
  wire.replace(wire.find("\"stop_reason\":\"tool_use\""), std::string("\"stop_reason\":\"tool_use\"").size(),
               "\"stop_reason\":\"model_context_window_exceeded\"");
  const auto failure = failure_of(AnthropicStreamAssembler(1024), wire);
  ASSERT_TRUE(failure);
  EXPECT_THAT(failure->what(), HasSubstr("in the middle of a tool call (bash) because the conversation filled the model's context window"));
}

TEST(AnthropicStreamEndTest, AMessageStopWithoutItsBlankLineEndsTheReplyWhenTheBodyEndsCleanly) {
  testing::FakeHttpServer server;
  std::string wire(kDocsThinkingStream);
  wire.resize(wire.size() - 2);  // "data: {"type": "message_stop"}" and the body's last chunk
  server.enqueue(testing::FakeResponse::event_stream({{wire}}));
  asio::io_context io;
  auto provider = AnthropicProvider::create(io.get_executor(), testing::test_settings(server.url(""), "claude-3-7-sonnet"));
  ASSERT_TRUE(provider.ok());
  const testing::Outcome outcome = testing::run_complete(io, **provider, testing::user_request("27 * 453?"));
  ASSERT_TRUE(outcome.response) << outcome.message();
  EXPECT_EQ(outcome.response->text, "27 * 453 = 12,231");
  EXPECT_EQ(server.requests().size(), 1u);
}

// The history of a turn that thought before it called a tool.
ModelRequest request_after_thinking(Purpose purpose) {
  ModelRequest request;
  request.system = "You are a trading desk.";
  request.purpose = purpose;
  request.tools.push_back({"bash", "Runs a command.", json::object{{"type", "object"}}});
  request.messages = json::parse(R"([
    {"role": "user", "content": [{"type": "text", "text": "Weather in Paris?"}]},
    {"role": "assistant", "content": [
      {"type": "thinking", "thinking": "I should use the tool.", "signature": "EuYBCkQYAiJA"},
      {"type": "redacted_thinking", "data": "EmwKAhgBEgy3"},
      {"type": "tool_use", "id": "toolu_01", "name": "bash", "input": {"command": "curl -s wttr.in/Paris"}}]},
    {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_01", "content": "Sunny, 21 C", "is_error": false}]}
  ])").as_array();
  return request;
}

// anthropic-sdk-python src/anthropic/types: MessageCreateParamsBase (message_create_params.py),
// ThinkingConfigEnabledParam (thinking_config_enabled_param.py), ThinkingBlockParam,
// RedactedThinkingBlockParam, ToolUseBlockParam, ToolResultBlockParam, TextBlockParam, ToolParam.
void expect_anthropic_request_shape(const json::object& body) {
  using testing::expect_sdk_shape;
  expect_sdk_shape(body,
                   {{"model", JsonKind::string, true}, {"max_tokens", JsonKind::integer, true},
                    {"messages", JsonKind::array, true}, {"system", JsonKind::string_or_array},
                    {"tools", JsonKind::array}, {"stream", JsonKind::boolean}, {"temperature", JsonKind::number},
                    {"thinking", JsonKind::object}},
                   "MessageCreateParams");
  if (const json::value* thinking = body.if_contains("thinking")) {
    expect_sdk_shape(thinking->as_object(), {{"type", JsonKind::string, true}, {"budget_tokens", JsonKind::integer, true}},
                     "ThinkingConfigEnabledParam");
    EXPECT_EQ(thinking->at("type"), "enabled");
  }
  for (const json::value& message : body.at("messages").as_array()) {
    expect_sdk_shape(message.as_object(), {{"role", JsonKind::string, true}, {"content", JsonKind::string_or_array, true}},
                     "MessageParam");
    for (const json::value& block : message.at("content").as_array()) {
      const json::object& fields = block.as_object();
      const std::string type(fields.at("type").as_string());
      if (type == "thinking") {
        expect_sdk_shape(fields, {{"type", JsonKind::string, true}, {"thinking", JsonKind::string, true}, {"signature", JsonKind::string, true}},
                         "ThinkingBlockParam");
      } else if (type == "redacted_thinking") {
        expect_sdk_shape(fields, {{"type", JsonKind::string, true}, {"data", JsonKind::string, true}}, "RedactedThinkingBlockParam");
      } else if (type == "tool_use") {
        expect_sdk_shape(fields, {{"type", JsonKind::string, true}, {"id", JsonKind::string, true}, {"name", JsonKind::string, true},
                                  {"input", JsonKind::object, true}, {"cache_control", JsonKind::object}},
                         "ToolUseBlockParam");
      } else if (type == "tool_result") {
        expect_sdk_shape(fields, {{"type", JsonKind::string, true}, {"tool_use_id", JsonKind::string, true},
                                  {"content", JsonKind::string_or_array}, {"is_error", JsonKind::boolean},
                                  {"cache_control", JsonKind::object}},
                         "ToolResultBlockParam");
      } else {
        EXPECT_EQ(type, "text");
        expect_sdk_shape(fields, {{"type", JsonKind::string, true}, {"text", JsonKind::string, true}, {"cache_control", JsonKind::object}},
                         "TextBlockParam");
      }
    }
  }
  if (const json::value* tools = body.if_contains("tools")) {
    for (const json::value& tool : tools->as_array()) {
      expect_sdk_shape(tool.as_object(), {{"name", JsonKind::string, true}, {"description", JsonKind::string},
                                          {"input_schema", JsonKind::object, true}, {"cache_control", JsonKind::object}},
                       "ToolParam");
    }
  }
}

TEST(AnthropicThinkingRequestTest, ATurnSendsThinkingAndItsBlocksBackUnchangedBeforeTheToolCall) {
  ProviderSettings settings;
  settings.model = "claude-sonnet-4-5";
  settings.max_tokens = 16000;
  settings.thinking_budget_tokens = 10000;
  const ModelRequest request = request_after_thinking(Purpose::turn);
  const json::object body = anthropic_request_body(request, settings);
  expect_anthropic_request_shape(body);
  EXPECT_EQ(body.at("thinking"), (json::object{{"type", "enabled"}, {"budget_tokens", 10000}}));
  EXPECT_EQ(body.at("messages").at(1), request.messages.at(1)) << "thinking blocks go back exactly as they came";
  EXPECT_EQ(body.at("messages").at(1).at("content").at(0).at("type"), "thinking");
  EXPECT_EQ(body.at("messages").at(1).at("content").at(2).at("type"), "tool_use");
}

TEST(AnthropicThinkingRequestTest, SummariesAndTurnsWithoutThinkingSendNoThinkingBlocks) {
  ProviderSettings settings;
  settings.model = "claude-sonnet-4-5";
  settings.max_tokens = 16000;
  settings.thinking_budget_tokens = 10000;
  for (Purpose purpose : {Purpose::summary, Purpose::side_question}) {
    const json::object body = anthropic_request_body(request_after_thinking(purpose), settings);
    expect_anthropic_request_shape(body);
    EXPECT_FALSE(body.contains("thinking"));
    EXPECT_EQ(json::serialize(body.at("messages")).find("thinking"), std::string::npos);
  }
  settings.thinking_budget_tokens.reset();
  const json::object body = anthropic_request_body(request_after_thinking(Purpose::turn), settings);
  expect_anthropic_request_shape(body);
  EXPECT_FALSE(body.contains("thinking"));
  const json::array& assistant = body.at("messages").at(1).at("content").as_array();
  ASSERT_EQ(assistant.size(), 1u);
  EXPECT_EQ(assistant[0].at("type"), "tool_use");
}

TEST(AnthropicThinkingRequestTest, NoCacheBreakpointOnAThinkingBlock) {
  ProviderSettings settings;
  settings.model = "claude-sonnet-4-5";
  settings.max_tokens = 16000;
  settings.thinking_budget_tokens = 2048;
  ModelRequest request = request_after_thinking(Purpose::turn);
  // A paused turn is asked again with the assistant's message last.
  request.messages.erase(request.messages.begin() + 2);
  request.messages.back().at("content").as_array().erase(request.messages.back().at("content").as_array().begin() + 1,
                                                         request.messages.back().at("content").as_array().end());
  const json::object body = anthropic_request_body(request, settings);
  EXPECT_FALSE(body.at("messages").at(1).at("content").at(0).as_object().contains("cache_control"));
}

// A tool that answers like a weather service.
class WeatherTool final : public tools::Tool {
 public:
  std::string_view name() const override { return "bash"; }
  std::string_view description() const override { return "Runs a command."; }
  std::string_view input_schema() const override { return R"({"type":"object"})"; }
  asio::awaitable<tools::ToolResult> call(const json::object&) override { co_return tools::ToolResult::success("Sunny, 21 C"); }
};

class NoSteering final : public desk::TurnContext {
 public:
  std::vector<desk::Trigger> take_steering() override { return {}; }
  void publish(const std::string& kind, json::object data) override { events.emplace_back(kind, std::move(data)); }
  void progress() override {}
  std::vector<std::pair<std::string, json::object>> events;
};

TEST(AnthropicThinkingTurnTest, AThinkingTurnOverTheWireSendsItsThinkingBackWithTheToolResult) {
  testing::FakeHttpServer server;
  server.enqueue(testing::FakeResponse::event_stream({{thinking_then_tool_use()}}));
  server.enqueue(testing::FakeResponse::event_stream({{std::string(kDocsThinkingStream)}}));
  asio::io_context io;
  ProviderSettings settings = testing::test_settings(server.url(""), "claude-sonnet-4-5");
  settings.max_tokens = 16000;
  settings.thinking_budget_tokens = 10000;
  auto provider = AnthropicProvider::create(io.get_executor(), settings);
  ASSERT_TRUE(provider.ok());
  auto registry = std::make_shared<tools::ToolRegistry>();
  registry->add(std::make_unique<WeatherTool>());
  ModelTurnRunner runner(std::shared_ptr<ModelProvider>(std::move(provider).value()), registry, TurnRunnerSettings{"desk"});
  NoSteering context;
  const desk::TurnOutcome outcome = wait(io, runner.run_turn("Weather in Paris?", context));
  EXPECT_EQ(outcome.reply, "27 * 453 = 12,231");
  EXPECT_TRUE(outcome.cut_reason.empty());

  ASSERT_EQ(server.requests().size(), 2u);
  const json::object second = json::parse(server.requests()[1].body).as_object();
  expect_anthropic_request_shape(second);
  EXPECT_EQ(second.at("thinking").at("budget_tokens"), 10000);
  const json::array& assistant = second.at("messages").at(1).at("content").as_array();
  ASSERT_EQ(assistant.size(), 2u);
  EXPECT_EQ(assistant[0], (json::object{{"type", "thinking"},
                                        {"thinking", "The user wants the weather in Paris. I should use the get_weather tool."},
                                        {"signature", "EuYBCkQYAiJAgCs1le6/Pol5Z4/JMomVOouGrWdhYNsH3ukzUECbB6iWrSQtsQuRHJID6lWV"}}));
  EXPECT_EQ(assistant[1].at("type"), "tool_use");
  EXPECT_EQ(second.at("messages").at(2).at("content").at(0).at("tool_use_id"), "toolu_01CswdEQBMshySk6Y9DFKrfq");
  // The transcript keeps both replies' blocks, for the session file and the next turn.
  EXPECT_EQ(runner.transcript().back().at("content").at(0).at("type"), "thinking");
}

}  // namespace
}  // namespace deskd::model
