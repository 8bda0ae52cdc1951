// The OpenAI-compatible provider without a network: the translated messages and body,
// the streamed chunks put together in any pieces, and every way they can go wrong.

#include "runner/model/openai_stream.h"

#include <boost/json.hpp>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "runner/model/openai_provider.h"
#include "tests/unit/model/stream_test_support.h"

namespace deskd::model {
namespace {

namespace json = boost::json;
using ::testing::HasSubstr;
using testing::assemble;
using testing::failure_of;
using testing::sse;

constexpr std::string_view kService = "The OpenAI API";

std::string stream_chunk(std::string_view delta, std::string_view finish_reason = "") {
  const std::string reason = finish_reason.empty() ? "null" : "\"" + std::string(finish_reason) + "\"";
  return sse("", R"({"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt-4.1-2025-04-14","choices":[{"index":0,"delta":)" +
                     std::string(delta) + R"(,"finish_reason":)" + reason + "}]}");
}
std::string content(std::string_view text) { return stream_chunk(R"({"content":)" + json::serialize(json::string(text)) + "}"); }
std::string call_piece(int index, std::string_view id, std::string_view name, std::string_view arguments) {
  json::object function{{"arguments", arguments}};
  if (!name.empty()) function["name"] = name;
  json::object call{{"index", index}, {"function", function}};
  if (!id.empty()) {
    call["id"] = id;
    call["type"] = "function";
  }
  return stream_chunk(json::serialize(json::object{{"tool_calls", json::array{call}}}));
}
std::string usage() {
  return sse("", R"({"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt-4.1-2025-04-14","choices":[],"usage":{"prompt_tokens":1000,"completion_tokens":50,"total_tokens":1050,"prompt_tokens_details":{"cached_tokens":800}}})");
}
std::string done() { return sse("", "[DONE]"); }

std::string openai_text_reply(std::string_view finish_reason) {
  return stream_chunk(R"({"role":"assistant","content":""})") + content("Nifty closed ") + content("at 24150.") +
         stream_chunk("{}", finish_reason) + usage() + done();
}

TEST(OpenAiStreamTest, ATextReplyWithUsageInAnyPieces) {
  const std::string wire = openai_text_reply("stop");
  for (std::size_t piece : {1u, 3u, 64u, 100000u}) {
    OpenAiStreamAssembler assembler(std::string(kService), 4096);
    const ModelResponse response = assemble(assembler, wire, piece);
    EXPECT_EQ(response.text, "Nifty closed at 24150.");
    EXPECT_EQ(response.model, "gpt-4.1-2025-04-14");
    EXPECT_EQ(response.stop_reason, "end_turn");
    EXPECT_EQ(response.usage, (desk::Usage{200, 50, 800, 0})) << "cached tokens are counted apart from the input";
  }
}

TEST(OpenAiStreamTest, SeveralToolCallsAssembledByIndex) {
  // The second call's pieces interleave with the first's, as a parallel server may send them.
  const std::string wire = content("Two looks.") + call_piece(0, "call_a", "bash", "") + call_piece(0, "", "", R"({"comm)") +
                           call_piece(1, "call_b", "read_file", R"({"pa)") + call_piece(0, "", "", R"(and": "ls -la\)") +
                           call_piece(0, "", "", R"(nwc"})") + call_piece(1, "", "", R"(th": "plan.md"})") +
                           call_piece(2, "call_c", "market_status", "") + stream_chunk("{}", "tool_calls") + usage() + done();
  for (std::size_t piece : {1u, 7u, 100000u}) {
    OpenAiStreamAssembler assembler(std::string(kService), 4096);
    const ModelResponse response = assemble(assembler, wire, piece);
    EXPECT_EQ(response.text, "Two looks.");
    EXPECT_EQ(response.stop_reason, "tool_use");
    ASSERT_EQ(response.tool_calls.size(), 3u);
    EXPECT_EQ(response.tool_calls[0].id, "call_a");
    EXPECT_EQ(response.tool_calls[0].name, "bash");
    EXPECT_EQ(response.tool_calls[0].input, (json::object{{"command", "ls -la\nwc"}}));
    EXPECT_EQ(response.tool_calls[1].id, "call_b");
    EXPECT_EQ(response.tool_calls[1].input, (json::object{{"path", "plan.md"}}));
    EXPECT_EQ(response.tool_calls[2].input, json::object{});
  }
}

TEST(OpenAiStreamTest, FinishReasonsInTheMessagesApisWords) {
  const std::pair<const char*, const char*> cases[] = {
      {"stop", "end_turn"}, {"tool_calls", "tool_use"}, {"length", "max_tokens"}, {"something_new", "something_new"}};
  for (const auto& [finish, stop] : cases) {
    OpenAiStreamAssembler assembler(std::string(kService), 4096);
    EXPECT_EQ(assemble(assembler, openai_text_reply(finish), 100000).stop_reason, stop);
  }
  // Some local servers say "stop" after tool calls.
  OpenAiStreamAssembler assembler(std::string(kService), 4096);
  const ModelResponse response = assemble(assembler, call_piece(0, "call_a", "bash", "{}") + stream_chunk("{}", "stop") + done(), 100000);
  EXPECT_EQ(response.stop_reason, "tool_use");
}

TEST(OpenAiStreamTest, AContentFilterStopIsARefusal) {
  const auto failure = failure_of(OpenAiStreamAssembler(std::string(kService), 4096), openai_text_reply("content_filter"));
  ASSERT_TRUE(failure);
  EXPECT_THAT(failure->what(), HasSubstr("The model refused to continue"));
  EXPECT_FALSE(failure->retryable());
}

TEST(OpenAiStreamTest, ArgumentsThatAreNotJsonNameTheTool) {
  const auto broken = failure_of(OpenAiStreamAssembler(std::string(kService), 4096),
                                 call_piece(0, "call_a", "bash", R"({"command": )") + stream_chunk("{}", "tool_calls") + done());
  ASSERT_TRUE(broken);
  EXPECT_THAT(broken->what(), HasSubstr("The model's arguments for the tool \"bash\" are not usable"));

  const auto cut = failure_of(OpenAiStreamAssembler(std::string(kService), 512),
                              call_piece(0, "call_a", "write_file", R"({"content": "# To)") + stream_chunk("{}", "length") + done());
  ASSERT_TRUE(cut);
  EXPECT_THAT(cut->what(), HasSubstr("The reply was cut at max_tokens (512) in the middle of a tool call (write_file)"));
}

TEST(OpenAiStreamTest, ErrorChunks) {
  const auto server = failure_of(OpenAiStreamAssembler(std::string(kService), 4096),
                                 content("Hel") + sse("", R"({"error":{"message":"The server had an error","type":"server_error"}})"));
  ASSERT_TRUE(server);
  EXPECT_TRUE(server->retryable());
  EXPECT_THAT(server->what(), HasSubstr("The server had an error"));

  const auto plain = failure_of(OpenAiStreamAssembler(std::string(kService), 4096), sse("", R"({"error":"model is loading"})"));
  ASSERT_TRUE(plain);
  EXPECT_FALSE(plain->retryable());
  EXPECT_THAT(plain->what(), HasSubstr("model is loading"));
}

TEST(OpenAiStreamTest, AMalformedChunkIsNamed) {
  const auto failure = failure_of(OpenAiStreamAssembler(std::string(kService), 4096), content("a") + sse("", R"({"choices":[)"));
  ASSERT_TRUE(failure);
  EXPECT_THAT(failure->what(), HasSubstr("sent a malformed chunk"));
}

// Empty pieces count no bytes, so a server that names a new call in each would grow the
// calls without end: they are bounded by their number.
TEST(OpenAiStreamTest, AReplyNamingThousandsOfToolCallsIsGivenUp) {
  std::string wire;
  for (int index = 0; index <= 4096; ++index) wire += call_piece(index, "", "", "");
  const auto failure = failure_of(OpenAiStreamAssembler(std::string(kService), 4096), wire);
  ASSERT_TRUE(failure);
  EXPECT_THAT(failure->what(), HasSubstr("named more than 4096 tool calls"));
  EXPECT_FALSE(failure->retryable());
}

TEST(OpenAiStreamTest, AStreamCutBeforeAnyFinishIsRetryable) {
  const auto failure = failure_of(OpenAiStreamAssembler(std::string(kService), 4096), content("Nifty closed"));
  ASSERT_TRUE(failure);
  EXPECT_THAT(failure->what(), HasSubstr("ended before [DONE]"));
  EXPECT_TRUE(failure->retryable());
  // A finish_reason without [DONE] is a whole reply from a terse server.
  OpenAiStreamAssembler assembler(std::string(kService), 4096);
  EXPECT_EQ(assemble(assembler, content("ok") + stream_chunk("{}", "stop"), 100000).text, "ok");
}

TEST(OpenAiErrorTest, ErrorBodiesAndTheContextWindow) {
  const ApiDialect dialect{std::string(kService), "x-request-id", read_openai_error_body};
  const ProviderError missing = error_for_status(
      dialect, 404, R"({"error":{"message":"The model `gpt-9` does not exist","type":"invalid_request_error","param":null,"code":"model_not_found"}})",
      std::nullopt, std::nullopt, "req_9");
  EXPECT_EQ(std::string(missing.what()),
            "The OpenAI API answered HTTP 404 (invalid_request_error): The model `gpt-9` does not exist. Check the model name "
            "and the base_url. (request id req_9)");
  EXPECT_FALSE(missing.retryable());

  const ProviderError window = error_for_status(
      dialect, 400,
      R"({"error":{"message":"This model's maximum context length is 128000 tokens. However, your messages resulted in 130000 tokens.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}})",
      std::nullopt, std::nullopt, std::nullopt);
  EXPECT_THAT(window.what(), HasSubstr("no longer fits the model's context window"));
  EXPECT_FALSE(window.retryable());

  const ProviderError ollama = error_for_status(dialect, 404, R"({"error":{"message":"model \"llama9\" not found, try pulling it first","type":"api_error"}})",
                                                std::nullopt, std::nullopt, std::nullopt);
  EXPECT_FALSE(ollama.retryable()) << "an api_error from a local server is not a reason to retry";
}

TEST(OpenAiRequestTest, MessagesAreTranslatedToChatCompletions) {
  ModelRequest request;
  request.system = "You are a trading desk.";
  request.messages = json::parse(R"([
    {"role": "user", "content": [{"type": "text", "text": "Look around."}]},
    {"role": "assistant", "content": [{"type": "text", "text": "Looking."},
                                       {"type": "tool_use", "id": "call_1", "name": "bash", "input": {"command": "ls"}}]},
    {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "call_1", "content": "plan.md", "is_error": false}]},
    {"role": "assistant", "content": [{"type": "tool_use", "id": "call_2", "name": "read_file", "input": {"path": "x"}},
                                       {"type": "tool_use", "id": "call_3", "name": "bash", "input": {}}]},
    {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "call_2", "content": "no such file", "is_error": true},
                                  {"type": "tool_result", "tool_use_id": "call_3", "content": [{"type": "text", "text": "ok"}], "is_error": false},
                                  {"type": "text", "text": "Message from the user while you worked: hurry"}]}
  ])").as_array();
  const json::array expected = json::parse(R"([
    {"role": "system", "content": "You are a trading desk."},
    {"role": "user", "content": "Look around."},
    {"role": "assistant", "content": "Looking.",
     "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "bash", "arguments": "{\"command\":\"ls\"}"}}]},
    {"role": "tool", "tool_call_id": "call_1", "content": "plan.md"},
    {"role": "assistant", "content": null,
     "tool_calls": [{"id": "call_2", "type": "function", "function": {"name": "read_file", "arguments": "{\"path\":\"x\"}"}},
                    {"id": "call_3", "type": "function", "function": {"name": "bash", "arguments": "{}"}}]},
    {"role": "tool", "tool_call_id": "call_2", "content": "Error: no such file"},
    {"role": "tool", "tool_call_id": "call_3", "content": "ok"},
    {"role": "user", "content": "Message from the user while you worked: hurry"}
  ])").as_array();
  EXPECT_EQ(openai_messages(request), expected) << json::serialize(openai_messages(request));
}

TEST(OpenAiRequestTest, TheBodyCarriesToolsAsFunctionsOnlyForTurns) {
  ModelRequest request;
  request.messages.push_back(json::object{{"role", "user"}, {"content", json::array{json::object{{"type", "text"}, {"text", "hi"}}}}});
  request.tools.push_back({"bash", "Runs a command.", json::object{{"type", "object"}}});
  ProviderSettings settings;
  settings.model = "llama3";
  settings.max_tokens = 1000;
  const json::object body = openai_request_body(request, settings);
  EXPECT_EQ(body.at("model"), "llama3");
  EXPECT_EQ(body.at("max_completion_tokens"), 1000);
  EXPECT_EQ(body.at("stream"), true);
  EXPECT_EQ(body.at("stream_options"), (json::object{{"include_usage", true}}));
  EXPECT_FALSE(body.contains("temperature"));
  EXPECT_EQ(body.at("tools"), json::parse(R"([{"type": "function", "function": {"name": "bash", "description": "Runs a command.",
                                                 "parameters": {"type": "object"}}}])"));
  request.purpose = Purpose::summary;
  settings.temperature = 0.5;
  const json::object summary = openai_request_body(request, settings);
  EXPECT_FALSE(summary.contains("tools"));
  EXPECT_EQ(summary.at("temperature"), 0.5);
}

}  // namespace
}  // namespace deskd::model
