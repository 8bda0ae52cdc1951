// The openai provider against a fake chat-completions server on loopback (as Ollama or
// OpenAI would answer): the real wire format, every request recorded, retries, a stalled
// stream, a /stop, and a key that never shows.

#include "runner/model/openai_provider.h"

#include <boost/asio.hpp>
#include <boost/json.hpp>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/unit/model/fake_http_server.h"
#include "tests/unit/model/provider_test_support.h"

namespace deskd::model {
namespace {

namespace asio = boost::asio;
namespace json = boost::json;
using std::chrono::milliseconds;
using ::testing::HasSubstr;
using testing::BodyPiece;
using testing::FakeHttpServer;
using testing::FakeResponse;
using testing::kApiKey;
using testing::Outcome;
using testing::run_complete;
using testing::test_settings;
using testing::user_request;

std::string provider_chunk(std::string_view delta, std::string_view finish_reason = "") {
  const std::string reason = finish_reason.empty() ? "null" : "\"" + std::string(finish_reason) + "\"";
  return R"(data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt-test-0101","choices":[{"index":0,"delta":)" +
         std::string(delta) + R"(,"finish_reason":)" + reason + "}]}\n\n";
}
const std::string kUsage =
    R"(data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt-test-0101","choices":[],"usage":{"prompt_tokens":500,"completion_tokens":20,"total_tokens":520,"prompt_tokens_details":{"cached_tokens":384}}})"
    "\n\n";
const std::string kDone = "data: [DONE]\n\n";

FakeResponse openai_text_answer() {
  return FakeResponse::event_stream({{provider_chunk(R"({"role":"assistant","content":""})")},
                                     {provider_chunk(R"({"content":"Nifty closed "})")},
                                     {provider_chunk(R"({"content":"at 24150."})")},
                                     {provider_chunk("{}", "stop")},
                                     {kUsage},
                                     {kDone}});
}

FakeResponse openai_error(unsigned status, std::string_view type, std::string_view message) {
  return FakeResponse::json(status, R"({"error":{"message":)" + json::serialize(json::string(message)) + R"(,"type":")" +
                                        std::string(type) + R"(","param":null,"code":null}})");
}

class OpenAiProviderTest : public ::testing::Test {
 protected:
  std::unique_ptr<OpenAiProvider> provider(ProviderSettings settings) {
    auto created = OpenAiProvider::create(io.get_executor(), std::move(settings));
    EXPECT_TRUE(created.ok()) << (created.ok() ? "" : created.error().what);
    return std::move(created).value();
  }
  std::unique_ptr<OpenAiProvider> provider() { return provider(test_settings(server.url("/v1"), "llama-test")); }

  FakeHttpServer server;
  asio::io_context io;
};

TEST_F(OpenAiProviderTest, ATextAnswer) {
  server.enqueue(openai_text_answer());
  auto openai = provider();
  const Outcome outcome = run_complete(io, *openai, user_request("How did Nifty close?"));
  ASSERT_TRUE(outcome.response) << outcome.message();
  EXPECT_EQ(outcome.response->text, "Nifty closed at 24150.");
  EXPECT_EQ(outcome.response->model, "gpt-test-0101");
  EXPECT_EQ(outcome.response->stop_reason, "end_turn");
  EXPECT_EQ(outcome.response->usage, (desk::Usage{116, 20, 384, 0}));
  EXPECT_EQ(openai->describe(), "openai:llama-test");

  const auto requests = server.requests();
  ASSERT_EQ(requests.size(), 1u);
  EXPECT_EQ(requests[0].method, "POST");
  EXPECT_EQ(requests[0].target, "/v1/chat/completions");
  EXPECT_EQ(requests[0].header("authorization"), "Bearer " + std::string(kApiKey));
  EXPECT_EQ(requests[0].header("content-type"), "application/json");
  const json::value body = json::parse(requests[0].body);
  EXPECT_EQ(body.at("model"), "llama-test");
  EXPECT_EQ(body.at("stream"), true);
  EXPECT_EQ(body.at("stream_options").at("include_usage"), true);
  EXPECT_EQ(body.at("max_completion_tokens"), 1024) << "OpenAI's name, which every OpenAI model reads";
  EXPECT_FALSE(body.as_object().contains("max_tokens"));
  EXPECT_EQ(body.at("messages").at(0), (json::object{{"role", "system"}, {"content", "You are a trading desk."}}));
  EXPECT_EQ(body.at("messages").at(1), (json::object{{"role", "user"}, {"content", "How did Nifty close?"}}));
}

TEST_F(OpenAiProviderTest, AnEmptyKeySendsNoAuthorization) {
  server.enqueue(openai_text_answer());
  ProviderSettings settings = test_settings(server.url("/v1/"), "llama-test");
  settings.api_key.clear();
  auto openai = provider(std::move(settings));
  const Outcome outcome = run_complete(io, *openai, user_request("hi"));
  ASSERT_TRUE(outcome.response) << outcome.message();
  const auto requests = server.requests();
  ASSERT_EQ(requests.size(), 1u);
  EXPECT_EQ(requests[0].target, "/v1/chat/completions") << "a trailing / on base_url is not doubled";
  EXPECT_EQ(requests[0].header("authorization"), std::nullopt);
}

TEST_F(OpenAiProviderTest, SeveralToolCallsStreamedInPieces) {
  const std::string wire =
      provider_chunk(R"({"role":"assistant","content":null,"tool_calls":[{"index":0,"id":"call_a","type":"function","function":{"name":"bash","arguments":""}}]})") +
      provider_chunk(R"({"tool_calls":[{"index":0,"function":{"arguments":"{\"comm"}}]})") +
      provider_chunk(R"({"tool_calls":[{"index":0,"function":{"arguments":"and\": \"ls\"}"}}]})") +
      provider_chunk(R"({"tool_calls":[{"index":1,"id":"call_b","type":"function","function":{"name":"read_file","arguments":"{\"path\""}}]})") +
      provider_chunk(R"({"tool_calls":[{"index":1,"function":{"arguments":": \"plan.md\"}"}}]})") + provider_chunk("{}", "tool_calls") + kUsage +
      kDone;
  std::vector<BodyPiece> pieces;
  for (std::size_t at = 0; at < wire.size(); at += 29) pieces.push_back({wire.substr(at, 29), milliseconds(at % 3 == 0 ? 3 : 0)});
  server.enqueue(FakeResponse::event_stream(std::move(pieces)));
  auto openai = provider();
  const Outcome outcome = run_complete(io, *openai, user_request("Look around."));
  ASSERT_TRUE(outcome.response) << outcome.message();
  EXPECT_EQ(outcome.response->stop_reason, "tool_use");
  ASSERT_EQ(outcome.response->tool_calls.size(), 2u);
  EXPECT_EQ(outcome.response->tool_calls[0].id, "call_a");
  EXPECT_EQ(outcome.response->tool_calls[0].input, (json::object{{"command", "ls"}}));
  EXPECT_EQ(outcome.response->tool_calls[1].id, "call_b");
  EXPECT_EQ(outcome.response->tool_calls[1].input, (json::object{{"path", "plan.md"}}));
}

TEST_F(OpenAiProviderTest, TheRequestCarriesToolsSystemResultsAndSteering) {
  server.enqueue(openai_text_answer());
  ModelRequest request;
  request.system = "You are a trading desk.";
  request.tools.push_back({"bash", "Runs a command.", json::object{{"type", "object"}}});
  request.messages = json::parse(R"([
    {"role": "user", "content": [{"type": "text", "text": "Look around."}]},
    {"role": "assistant", "content": [{"type": "tool_use", "id": "call_1", "name": "bash", "input": {"command": "ls"}}]},
    {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "call_1", "content": "permission denied", "is_error": true},
                                  {"type": "text", "text": "Message from the user while you worked: stop after this"}]}
  ])").as_array();
  auto openai = provider();
  const Outcome outcome = run_complete(io, *openai, request);
  ASSERT_TRUE(outcome.response) << outcome.message();
  const auto requests = server.requests();
  ASSERT_EQ(requests.size(), 1u);
  const json::value body = json::parse(requests[0].body);
  EXPECT_EQ(body.at("tools").at(0).at("type"), "function");
  EXPECT_EQ(body.at("tools").at(0).at("function").at("name"), "bash");
  EXPECT_EQ(body.at("tools").at(0).at("function").at("parameters"), (json::object{{"type", "object"}}));
  const json::array& messages = body.at("messages").as_array();
  ASSERT_EQ(messages.size(), 5u);
  EXPECT_EQ(messages[0].at("role"), "system");
  EXPECT_EQ(messages[2].at("tool_calls").at(0).at("function").at("arguments"), R"({"command":"ls"})");
  EXPECT_EQ(messages[3], (json::object{{"role", "tool"}, {"tool_call_id", "call_1"}, {"content", "Error: permission denied"}}));
  EXPECT_EQ(messages[4], (json::object{{"role", "user"}, {"content", "Message from the user while you worked: stop after this"}}));
}

TEST_F(OpenAiProviderTest, RateLimitedWithRetryAfterThenAnswered) {
  FakeResponse limited = openai_error(429, "requests", "Rate limit reached for requests");
  limited.headers.emplace_back("retry-after", "1");
  server.enqueue(std::move(limited));
  server.enqueue(openai_text_answer());
  auto openai = provider();
  const Outcome outcome = run_complete(io, *openai, user_request("hi"));
  ASSERT_TRUE(outcome.response) << outcome.message();
  EXPECT_EQ(server.requests().size(), 2u);
  EXPECT_GE(outcome.elapsed, milliseconds(900));
}

TEST_F(OpenAiProviderTest, AServerErrorThenAnswered) {
  server.enqueue(openai_error(500, "server_error", "The server had an error while processing your request."));
  server.enqueue(openai_error(503, "server_error", "Service unavailable"));
  server.enqueue(openai_text_answer());
  auto openai = provider();
  const Outcome outcome = run_complete(io, *openai, user_request("hi"));
  ASSERT_TRUE(outcome.response) << outcome.message();
  EXPECT_EQ(server.requests().size(), 3u);
}

TEST_F(OpenAiProviderTest, AnErrorInTheMiddleOfTheStreamThenAnswered) {
  server.enqueue(FakeResponse::event_stream(
      {{provider_chunk(R"({"content":"Nif"})")},
       {R"(data: {"error":{"message":"The server had an error while processing your request.","type":"server_error"}})" "\n\n"}}));
  server.enqueue(openai_text_answer());
  auto openai = provider();
  const Outcome outcome = run_complete(io, *openai, user_request("hi"));
  ASSERT_TRUE(outcome.response) << outcome.message();
  EXPECT_EQ(outcome.response->text, "Nifty closed at 24150.") << "nothing of the failed attempt is kept";
  EXPECT_EQ(server.requests().size(), 2u);
}

TEST_F(OpenAiProviderTest, ABadRequestIsNotRetriedAndItsMessageShows) {
  server.enqueue(openai_error(400, "invalid_request_error", "Invalid schema for function 'bash'"));
  auto openai = provider();
  const Outcome outcome = run_complete(io, *openai, user_request("hi"));
  const auto error = outcome.provider_error();
  ASSERT_TRUE(error);
  EXPECT_THAT(error->what(), HasSubstr("HTTP 400 (invalid_request_error): Invalid schema for function 'bash'."));
  EXPECT_THAT(error->what(), HasSubstr("The OpenAI-compatible API at 127.0.0.1:"));
  EXPECT_EQ(server.requests().size(), 1u);
}

TEST_F(OpenAiProviderTest, AServerThatDoesNotStreamIsNamed) {
  server.enqueue(FakeResponse::json(200, R"({"id":"chatcmpl-1","choices":[{"index":0,"message":{"role":"assistant","content":"hi"}}]})"));
  auto openai = provider();
  const Outcome outcome = run_complete(io, *openai, user_request("hi"));
  const auto error = outcome.provider_error();
  ASSERT_TRUE(error);
  EXPECT_THAT(error->what(), HasSubstr("answered with application/json instead of a stream of events"));
  EXPECT_EQ(server.requests().size(), 1u);
}

TEST_F(OpenAiProviderTest, RetriesRunOut) {
  for (int i = 0; i < 6; ++i) server.enqueue(openai_error(502, "server_error", "Bad gateway"));
  auto openai = provider();
  const Outcome outcome = run_complete(io, *openai, user_request("hi"));
  const auto error = outcome.provider_error();
  ASSERT_TRUE(error);
  EXPECT_THAT(error->what(), HasSubstr("still failed after 4 attempts"));
  EXPECT_THAT(error->what(), HasSubstr("HTTP 502 (server_error): Bad gateway."));
  EXPECT_EQ(server.requests().size(), 4u);
}

TEST_F(OpenAiProviderTest, AStalledStreamEndsWithAVisibleError) {
  FakeResponse stalled = FakeResponse::event_stream({{provider_chunk(R"({"content":"Nif"})")}});
  stalled.stall = true;
  server.enqueue(std::move(stalled));
  server.enqueue(openai_text_answer());
  ProviderSettings settings = test_settings(server.url("/v1"), "llama-test");
  settings.http.idle_timeout = milliseconds(300);
  auto openai = provider(std::move(settings));
  const Outcome outcome = run_complete(io, *openai, user_request("hi"));
  const auto error = outcome.provider_error();
  ASSERT_TRUE(error);
  EXPECT_THAT(error->what(), HasSubstr("stalled"));
  EXPECT_LT(outcome.elapsed, std::chrono::seconds(2));
  EXPECT_EQ(server.requests().size(), 1u);
}

TEST_F(OpenAiProviderTest, AStopInTheMiddleOfTheStreamEndsItAtOnce) {
  FakeResponse stalled = FakeResponse::event_stream({{provider_chunk(R"({"content":"Nif"})")}});
  stalled.stall = true;
  server.enqueue(std::move(stalled));
  auto openai = provider();
  const Outcome outcome = run_complete(io, *openai, user_request("hi"), milliseconds(200));
  EXPECT_TRUE(outcome.cancelled()) << outcome.message();
  EXPECT_LT(outcome.elapsed, milliseconds(1200));
}

TEST_F(OpenAiProviderTest, TheKeyNeverShowsInAnError) {
  server.enqueue(openai_error(401, "invalid_request_error", "Incorrect API key provided: " + std::string(kApiKey) + "."));
  auto openai = provider();
  const Outcome outcome = run_complete(io, *openai, user_request("hi"));
  const auto error = outcome.provider_error();  // checks the key is absent
  ASSERT_TRUE(error);
  EXPECT_THAT(error->what(), HasSubstr("Incorrect API key provided: [redacted]."));
}

}  // namespace
}  // namespace deskd::model
