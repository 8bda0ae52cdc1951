// The openai provider against recorded streams of the live Chat Completions API: a refusal
// streamed as delta.refusal, a reply cut by its limit (finish_reason "length"), a stream
// without a usage chunk, an exhausted quota (429 insufficient_quota, never retried), a last
// event without its closing blank line; and the request compared with openai-python's
// request types. Each fixture names where its wire text comes from.

#include "runner/model/openai_provider.h"

#include <boost/asio.hpp>
#include <boost/json.hpp>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "runner/model/openai_stream.h"
#include "tests/unit/model/fake_http_server.h"
#include "tests/unit/model/openai_recorded_streams.h"
#include "tests/unit/model/provider_test_support.h"
#include "tests/unit/model/request_shape.h"
#include "tests/unit/model/stream_test_support.h"

namespace deskd::model {
namespace {

namespace asio = boost::asio;
namespace json = boost::json;
using ::testing::HasSubstr;
using testing::assemble;
using testing::FakeHttpServer;
using testing::FakeResponse;
using testing::JsonKind;
using testing::kOpenAiRefusalStream;
using testing::refusal_chunk;
using testing::Outcome;
using testing::run_complete;
using testing::test_settings;
using testing::user_request;

// A reply cut by its limit, as openai-python's test_parse_max_tokens_reached recorded it
// (same file: max_tokens=1, finish_reason "length"), in the ChatCompletionChunk shape.
const std::string kLengthStream =
    refusal_chunk(R"({"role":"assistant","content":"","refusal":null})") + refusal_chunk(R"({"content":"{\""})") +
    refusal_chunk("{}", R"("length")") +
    R"(data: {"id":"chatcmpl-9tXjSozLhAbCdEfGhIjKlMnOpQrSt","object":"chat.completion.chunk","created":1723024734,"model":"gpt-4o-2024-08-06","system_fingerprint":"fp_845eaabc1f","choices":[],"usage":{"prompt_tokens":79,"completion_tokens":1,"total_tokens":80}})"
    "\n\n" "data: [DONE]\n\n";

// An OpenAI-compatible server that ignores stream_options: the same chunks, no usage chunk
// (ChatCompletionChunk.usage: "only present when you set stream_options"; llama.cpp and
// older Ollama send none).
const std::string kNoUsageStream = refusal_chunk(R"({"role":"assistant","content":"Nifty closed at 24150."})") +
                                   refusal_chunk("{}", R"("stop")") + "data: [DONE]\n\n";

// The 429 body of "Error codes" (https://platform.openai.com/docs/guides/error-codes:
// "429 - You exceeded your current quota, please check your plan and billing details"),
// as openai-python's tests give it ({"error": {"message", "type", "param", "code"}}).
constexpr std::string_view kInsufficientQuota =
    R"({"error":{"message":"You exceeded your current quota, please check your plan and billing details. For more information on this error, read the docs: https://platform.openai.com/docs/guides/error-codes/api-errors.","type":"insufficient_quota","param":null,"code":"insufficient_quota"}})";

TEST(OpenAiWireTest, ARefusalKeepsItsWords) {
  for (std::size_t piece : {1u, 13u, 100000u}) {
    try {
      OpenAiStreamAssembler assembler("The OpenAI API", 1024);
      assemble(assembler, kOpenAiRefusalStream, piece);
      ADD_FAILURE() << "a refusal was taken as a reply";
    } catch (const ProviderError& error) {
      EXPECT_EQ(std::string(error.what()), "The model refused to continue: I'm sorry, but I can't assist with that request.");
      EXPECT_FALSE(error.retryable());
    }
  }
}

TEST(OpenAiWireTest, ALengthStopIsACutReply) {
  OpenAiStreamAssembler assembler("The OpenAI API", 1);
  const ModelResponse response = assemble(assembler, kLengthStream, 7);
  EXPECT_EQ(response.stop_reason, "max_tokens");
  EXPECT_TRUE(is_cut_reply(response.stop_reason));
  EXPECT_EQ(response.text, "{\"");
  EXPECT_TRUE(response.usage_reported);
}

TEST(OpenAiWireTest, NoUsageChunkIsUnknownUsageNotZero) {
  OpenAiStreamAssembler assembler("The OpenAI-compatible API at 127.0.0.1:8080", 1024);
  const ModelResponse response = assemble(assembler, kNoUsageStream, 100000);
  EXPECT_EQ(response.text, "Nifty closed at 24150.");
  EXPECT_FALSE(response.usage_reported);

  OpenAiStreamAssembler with_usage("The OpenAI API", 1024);
  EXPECT_TRUE(assemble(with_usage, kLengthStream, 100000).usage_reported);
}

class OpenAiWireProviderTest : public ::testing::Test {
 protected:
  std::unique_ptr<OpenAiProvider> provider(ProviderSettings settings) {
    auto created = OpenAiProvider::create(io.get_executor(), std::move(settings));
    EXPECT_TRUE(created.ok());
    return std::move(created).value();
  }
  FakeHttpServer server;
  asio::io_context io;
};

TEST_F(OpenAiWireProviderTest, AnExhaustedQuotaIsNotRetriedAndSaysSo) {
  server.enqueue(FakeResponse::json(429, std::string(kInsufficientQuota)));
  server.enqueue(FakeResponse::event_stream({{kNoUsageStream}}));
  auto openai = provider(test_settings(server.url("/v1"), "gpt-4o"));
  const Outcome outcome = run_complete(io, *openai, user_request("hi"));
  const auto error = outcome.provider_error();
  ASSERT_TRUE(error);
  EXPECT_FALSE(error->retryable());
  EXPECT_EQ(error->http_status(), 429u);
  EXPECT_THAT(error->what(), HasSubstr("HTTP 429 (insufficient_quota): You exceeded your current quota"));
  EXPECT_THAT(error->what(), HasSubstr("quota or credit is used up"));
  EXPECT_EQ(server.requests().size(), 1u) << "waiting does not refill a quota";
}

TEST_F(OpenAiWireProviderTest, ARateLimit429IsStillRetried) {
  server.enqueue(FakeResponse::json(
      429, R"json({"error":{"message":"Rate limit reached for gpt-4o in organization org-x on tokens per min (TPM)","type":"tokens","param":null,"code":"rate_limit_exceeded"}})json"));
  server.enqueue(FakeResponse::event_stream({{kNoUsageStream}}));
  auto openai = provider(test_settings(server.url("/v1"), "gpt-4o"));
  const Outcome outcome = run_complete(io, *openai, user_request("hi"));
  ASSERT_TRUE(outcome.response) << outcome.message();
  EXPECT_EQ(server.requests().size(), 2u);
}

TEST_F(OpenAiWireProviderTest, ALastEventWithoutItsBlankLineIsWholeWhenTheBodyEndsCleanly) {
  // The chunk with the last words and finish_reason has no line ending at all, no [DONE]
  // follows, and the body ends there (Content-Length met): that chunk is part of the reply.
  std::string wire = refusal_chunk(R"({"role":"assistant","content":"Nifty closed"})") +
                     refusal_chunk(R"({"content":" at 24150."})", R"("stop")");
  wire.resize(wire.size() - 2);
  FakeResponse response = FakeResponse::event_stream({{wire}});
  response.framing = FakeResponse::Framing::content_length;
  server.enqueue(std::move(response));
  auto openai = provider(test_settings(server.url("/v1"), "gpt-4o"));
  const Outcome outcome = run_complete(io, *openai, user_request("hi"));
  ASSERT_TRUE(outcome.response) << outcome.message();
  EXPECT_EQ(outcome.response->text, "Nifty closed at 24150.");
  EXPECT_EQ(server.requests().size(), 1u) << "not taken for a cut stream and sent again";
}

TEST_F(OpenAiWireProviderTest, AConnectionCutBeforeTheLastBlankLineIsStillACut) {
  std::string wire = refusal_chunk(R"({"role":"assistant","content":"Nifty closed"})") +
                     refusal_chunk(R"({"content":" at 24150."})", R"("stop")");
  wire.resize(wire.size() - 2);
  FakeResponse cut = FakeResponse::event_stream({{wire}});
  cut.close_mid_body = true;
  server.enqueue(std::move(cut));
  server.enqueue(FakeResponse::event_stream({{kNoUsageStream}}));
  auto openai = provider(test_settings(server.url("/v1"), "gpt-4o"));
  const Outcome outcome = run_complete(io, *openai, user_request("hi"));
  ASSERT_TRUE(outcome.response) << outcome.message();
  EXPECT_EQ(server.requests().size(), 2u) << "a broken connection is a cut reply, asked again";
}

// openai-python src/openai/types/chat: CompletionCreateParamsStreaming
// (completion_create_params.py), ChatCompletionStreamOptionsParam, ChatCompletionToolParam /
// FunctionDefinition, and the message params (system, user, assistant, tool).
void expect_openai_request_shape(const json::object& body) {
  using testing::expect_sdk_shape;
  expect_sdk_shape(body,
                   {{"model", JsonKind::string, true}, {"messages", JsonKind::array, true}, {"stream", JsonKind::boolean, true},
                    {"stream_options", JsonKind::object}, {"max_completion_tokens", JsonKind::integer},
                    {"max_tokens", JsonKind::integer}, {"temperature", JsonKind::number}, {"tools", JsonKind::array}},
                   "CompletionCreateParamsStreaming");
  EXPECT_EQ(body.at("stream"), true);
  expect_sdk_shape(body.at("stream_options").as_object(), {{"include_usage", JsonKind::boolean}, {"include_obfuscation", JsonKind::boolean}},
                   "ChatCompletionStreamOptionsParam");
  for (const json::value& message : body.at("messages").as_array()) {
    const json::object& fields = message.as_object();
    const std::string role(fields.at("role").as_string());
    if (role == "assistant") {
      expect_sdk_shape(fields, {{"role", JsonKind::string, true}, {"content", JsonKind::string_or_null}, {"tool_calls", JsonKind::array}},
                       "ChatCompletionAssistantMessageParam");
      if (const json::value* calls = fields.if_contains("tool_calls")) {
        for (const json::value& call : calls->as_array()) {
          expect_sdk_shape(call.as_object(), {{"id", JsonKind::string, true}, {"type", JsonKind::string, true}, {"function", JsonKind::object, true}},
                           "ChatCompletionMessageFunctionToolCallParam");
          expect_sdk_shape(call.at("function").as_object(), {{"name", JsonKind::string, true}, {"arguments", JsonKind::string, true}},
                           "Function");
        }
      }
    } else if (role == "tool") {
      expect_sdk_shape(fields, {{"role", JsonKind::string, true}, {"content", JsonKind::string_or_array, true}, {"tool_call_id", JsonKind::string, true}},
                       "ChatCompletionToolMessageParam");
    } else {
      EXPECT_TRUE(role == "system" || role == "user") << role;
      expect_sdk_shape(fields, {{"role", JsonKind::string, true}, {"content", JsonKind::string_or_array, true}}, "ChatCompletionUserMessageParam");
    }
  }
  if (const json::value* tools = body.if_contains("tools")) {
    for (const json::value& tool : tools->as_array()) {
      expect_sdk_shape(tool.as_object(), {{"type", JsonKind::string, true}, {"function", JsonKind::object, true}}, "ChatCompletionFunctionToolParam");
      expect_sdk_shape(tool.at("function").as_object(), {{"name", JsonKind::string, true}, {"description", JsonKind::string},
                                                          {"parameters", JsonKind::object}, {"strict", JsonKind::boolean}},
                       "FunctionDefinition");
    }
  }
}

// A session the anthropic provider wrote (thinking and server tool blocks) continued on the
// openai provider: the blocks it cannot send are passed over.
ModelRequest session_with_thinking() {
  ModelRequest request;
  request.system = "You are a trading desk.";
  request.tools.push_back({"bash", "Runs a command.", json::object{{"type", "object"}}});
  request.messages = json::parse(R"([
    {"role": "user", "content": [{"type": "text", "text": "Look around."}]},
    {"role": "assistant", "content": [{"type": "thinking", "thinking": "Let me look.", "signature": "EqQB"},
                                       {"type": "redacted_thinking", "data": "EmwK"},
                                       {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {"query": "nifty"}},
                                       {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_1", "content": []},
                                       {"type": "text", "text": "Looking."},
                                       {"type": "tool_use", "id": "call_1", "name": "bash", "input": {"command": "ls"}}]},
    {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "call_1", "content": "plan.md", "is_error": false}]}
  ])").as_array();
  return request;
}

TEST(OpenAiRequestShapeTest, TheBodyHasTheSdksFieldsAndTypes) {
  ProviderSettings settings;
  settings.model = "gpt-5";
  settings.max_tokens = 4096;
  const json::object body = openai_request_body(session_with_thinking(), settings);
  expect_openai_request_shape(body);
  EXPECT_EQ(body.at("max_completion_tokens"), 4096) << "GPT-5 and the o-series refuse max_tokens";
  EXPECT_FALSE(body.contains("max_tokens"));
  EXPECT_EQ(body.at("stream_options"), (json::object{{"include_usage", true}}));
  const json::array& messages = body.at("messages").as_array();
  ASSERT_EQ(messages.size(), 4u);
  EXPECT_EQ(messages[2], (json::object{{"role", "assistant"}, {"content", "Looking."},
                                       {"tool_calls", json::array{json::object{{"id", "call_1"}, {"type", "function"},
                                                                               {"function", {{"name", "bash"}, {"arguments", "{\"command\":\"ls\"}"}}}}}}}));
  EXPECT_EQ(json::serialize(body).find("thinking"), std::string::npos);
  EXPECT_EQ(json::serialize(body).find("srvtoolu"), std::string::npos);
}

TEST(OpenAiRequestShapeTest, ALocalServerMayAskForMaxTokens) {
  ProviderSettings settings;
  settings.model = "llama3.1";
  settings.max_tokens = 512;
  settings.openai_max_tokens_field = "max_tokens";
  const json::object body = openai_request_body(user_request("hi"), settings);
  expect_openai_request_shape(body);
  EXPECT_EQ(body.at("max_tokens"), 512);
  EXPECT_FALSE(body.contains("max_completion_tokens"));
}

}  // namespace
}  // namespace deskd::model
