// The anthropic provider against a fake Messages API on loopback: the real wire format,
// every request recorded, retries on what passes by itself and none on what does not,
// a stalled stream, a /stop, and a key that never shows.

#include "runner/model/anthropic_provider.h"

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

constexpr std::string_view kMessageStart =
    "event: message_start\n"
    R"(data: {"type":"message_start","message":{"id":"msg_01","type":"message","role":"assistant","model":"claude-test-20250101","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":120,"cache_creation_input_tokens":30,"cache_read_input_tokens":900,"output_tokens":1}}})"
    "\n\n";
constexpr std::string_view kText =
    "event: content_block_start\n"
    R"(data: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}})"
    "\n\n"
    "event: ping\n"
    R"(data: {"type": "ping"})"
    "\n\n"
    "event: content_block_delta\n"
    R"(data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Nifty closed "}})"
    "\n\n"
    "event: content_block_delta\n"
    R"(data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"at 24150."}})"
    "\n\n"
    "event: content_block_stop\n"
    R"(data: {"type":"content_block_stop","index":0})"
    "\n\n";
constexpr std::string_view kEndTurn =
    "event: message_delta\n"
    R"(data: {"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":42}})"
    "\n\n"
    "event: message_stop\n"
    R"(data: {"type":"message_stop"})"
    "\n\n";

FakeResponse text_answer() {
  return FakeResponse::event_stream({{std::string(kMessageStart)}, {std::string(kText)}, {std::string(kEndTurn)}});
}

FakeResponse anthropic_error(unsigned status, std::string_view type, std::string_view message) {
  FakeResponse response = FakeResponse::json(status, R"({"type":"error","error":{"type":")" + std::string(type) +
                                                         R"(","message":)" + json::serialize(json::string(message)) +
                                                         R"(},"request_id":"req_test"})");
  response.headers.emplace_back("request-id", "req_test");
  return response;
}

class AnthropicProviderTest : public ::testing::Test {
 protected:
  std::unique_ptr<AnthropicProvider> provider(ProviderSettings settings) {
    auto created = AnthropicProvider::create(io.get_executor(), std::move(settings));
    EXPECT_TRUE(created.ok()) << (created.ok() ? "" : created.error().what);
    return std::move(created).value();
  }
  std::unique_ptr<AnthropicProvider> provider() { return provider(test_settings(server.url(""), "claude-test")); }

  FakeHttpServer server;
  asio::io_context io;
};

TEST_F(AnthropicProviderTest, ATextAnswer) {
  server.enqueue(text_answer());
  auto anthropic = provider();
  const Outcome outcome = run_complete(io, *anthropic, user_request("How did Nifty close?"));
  ASSERT_TRUE(outcome.response) << outcome.message();
  EXPECT_EQ(outcome.response->text, "Nifty closed at 24150.");
  EXPECT_EQ(outcome.response->model, "claude-test-20250101");
  EXPECT_EQ(outcome.response->stop_reason, "end_turn");
  EXPECT_EQ(outcome.response->usage, (desk::Usage{120, 42, 900, 30}));
  EXPECT_EQ(anthropic->describe(), "anthropic:claude-test");

  const auto requests = server.requests();
  ASSERT_EQ(requests.size(), 1u);
  EXPECT_EQ(requests[0].method, "POST");
  EXPECT_EQ(requests[0].target, "/v1/messages");
  EXPECT_EQ(requests[0].header("x-api-key"), std::string(kApiKey));
  EXPECT_EQ(requests[0].header("anthropic-version"), "2023-06-01");
  EXPECT_EQ(requests[0].header("content-type"), "application/json");
  EXPECT_EQ(requests[0].header("accept"), "text/event-stream");
  const json::value body = json::parse(requests[0].body);
  EXPECT_EQ(body.at("model"), "claude-test");
  EXPECT_EQ(body.at("max_tokens"), 1024);
  EXPECT_EQ(body.at("stream"), true);
  EXPECT_EQ(body.at("messages").at(0).at("content").at(0).at("text"), "How did Nifty close?");
}

TEST_F(AnthropicProviderTest, SeveralToolCallsStreamedInPieces) {
  const std::string wire =
      std::string(kMessageStart) +
      "event: content_block_start\n"
      R"(data: {"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"toolu_01","name":"bash","input":{}}})"
      "\n\nevent: content_block_delta\n"
      R"(data: {"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{\"comm"}})"
      "\n\nevent: content_block_delta\n"
      R"(data: {"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"and\": \"ls\"}"}})"
      "\n\nevent: content_block_stop\n"
      R"(data: {"type":"content_block_stop","index":0})"
      "\n\nevent: content_block_start\n"
      R"(data: {"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"toolu_02","name":"read_file","input":{}}})"
      "\n\nevent: content_block_delta\n"
      R"(data: {"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"path\": \"plan.md\"}"}})"
      "\n\nevent: content_block_stop\n"
      R"(data: {"type":"content_block_stop","index":1})"
      "\n\nevent: message_delta\n"
      R"(data: {"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"output_tokens":60}})"
      "\n\nevent: message_stop\n"
      R"(data: {"type":"message_stop"})"
      "\n\n";
  // Cut the wire every 37 bytes, wherever that falls, with a pause now and then.
  std::vector<BodyPiece> pieces;
  for (std::size_t at = 0; at < wire.size(); at += 37) pieces.push_back({wire.substr(at, 37), milliseconds(at % 5 == 0 ? 5 : 0)});
  server.enqueue(FakeResponse::event_stream(std::move(pieces)));
  auto anthropic = provider();
  const Outcome outcome = run_complete(io, *anthropic, user_request("Look around."));
  ASSERT_TRUE(outcome.response) << outcome.message();
  EXPECT_EQ(outcome.response->stop_reason, "tool_use");
  ASSERT_EQ(outcome.response->tool_calls.size(), 2u);
  EXPECT_EQ(outcome.response->tool_calls[0].id, "toolu_01");
  EXPECT_EQ(outcome.response->tool_calls[0].input, (json::object{{"command", "ls"}}));
  EXPECT_EQ(outcome.response->tool_calls[1].name, "read_file");
  EXPECT_EQ(outcome.response->tool_calls[1].input, (json::object{{"path", "plan.md"}}));
}

TEST_F(AnthropicProviderTest, TheRequestCarriesToolsSystemResultsAndSteering) {
  server.enqueue(text_answer());
  ModelRequest request;
  request.system = "You are a trading desk.";
  request.tools.push_back({"bash", "Runs a command.", json::object{{"type", "object"}}});
  request.messages = json::parse(R"([
    {"role": "user", "content": [{"type": "text", "text": "Look around."}]},
    {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1", "name": "bash", "input": {"command": "ls"}}]},
    {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "permission denied", "is_error": true},
                                  {"type": "text", "text": "Message from the user while you worked: stop after this"}]}
  ])").as_array();
  auto anthropic = provider();
  const Outcome outcome = run_complete(io, *anthropic, request);
  ASSERT_TRUE(outcome.response) << outcome.message();
  const auto requests = server.requests();
  ASSERT_EQ(requests.size(), 1u);
  const json::value body = json::parse(requests[0].body);
  EXPECT_EQ(body.at("system").at(0).at("text"), "You are a trading desk.");
  EXPECT_EQ(body.at("tools").at(0).at("name"), "bash");
  EXPECT_EQ(body.at("tools").at(0).at("input_schema"), (json::object{{"type", "object"}}));
  const json::array& results = body.at("messages").at(2).at("content").as_array();
  ASSERT_EQ(results.size(), 2u);
  EXPECT_EQ(results[0].at("type"), "tool_result");
  EXPECT_EQ(results[0].at("tool_use_id"), "toolu_1");
  EXPECT_EQ(results[0].at("content"), "permission denied");
  EXPECT_EQ(results[0].at("is_error"), true);
  EXPECT_EQ(results[1].at("type"), "text");
  EXPECT_EQ(results[1].at("text"), "Message from the user while you worked: stop after this");
}

TEST_F(AnthropicProviderTest, RateLimitedWithRetryAfterThenAnswered) {
  FakeResponse limited = anthropic_error(429, "rate_limit_error", "Number of request tokens has exceeded your rate limit.");
  limited.headers.emplace_back("retry-after", "1");
  server.enqueue(std::move(limited));
  server.enqueue(text_answer());
  auto anthropic = provider();
  const Outcome outcome = run_complete(io, *anthropic, user_request("hi"));
  ASSERT_TRUE(outcome.response) << outcome.message();
  EXPECT_EQ(server.requests().size(), 2u);
  EXPECT_GE(outcome.elapsed, milliseconds(900)) << "retry-after: 1 was honoured";
}

TEST_F(AnthropicProviderTest, ServerErrorsAndOverloadThenAnswered) {
  server.enqueue(anthropic_error(500, "api_error", "Internal server error"));
  server.enqueue(anthropic_error(529, "overloaded_error", "Overloaded"));
  server.enqueue(text_answer());
  auto anthropic = provider();
  const Outcome outcome = run_complete(io, *anthropic, user_request("hi"));
  ASSERT_TRUE(outcome.response) << outcome.message();
  EXPECT_EQ(outcome.response->text, "Nifty closed at 24150.");
  EXPECT_EQ(server.requests().size(), 3u);
}

TEST_F(AnthropicProviderTest, OverloadedInTheMiddleOfTheStreamThenAnswered) {
  server.enqueue(FakeResponse::event_stream(
      {{std::string(kMessageStart)},
       {"event: error\n" R"(data: {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}})" "\n\n"}}));
  server.enqueue(text_answer());
  auto anthropic = provider();
  const Outcome outcome = run_complete(io, *anthropic, user_request("hi"));
  ASSERT_TRUE(outcome.response) << outcome.message();
  EXPECT_EQ(outcome.response->text, "Nifty closed at 24150.");
  EXPECT_EQ(server.requests().size(), 2u);
}

TEST_F(AnthropicProviderTest, ABadRequestIsNotRetriedAndItsMessageShows) {
  server.enqueue(anthropic_error(400, "invalid_request_error", "messages.1.content.0.tool_use.name: String should match pattern"));
  server.enqueue(text_answer());
  auto anthropic = provider();
  const Outcome outcome = run_complete(io, *anthropic, user_request("hi"));
  const auto error = outcome.provider_error();
  ASSERT_TRUE(error);
  EXPECT_THAT(error->what(), HasSubstr("HTTP 400 (invalid_request_error): messages.1.content.0.tool_use.name: String should match pattern"));
  EXPECT_THAT(error->what(), HasSubstr("(request id req_test)"));
  EXPECT_EQ(error->http_status(), 400u);
  EXPECT_EQ(server.requests().size(), 1u);
}

TEST_F(AnthropicProviderTest, RetriesRunOut) {
  for (int i = 0; i < 6; ++i) server.enqueue(anthropic_error(529, "overloaded_error", "Overloaded"));
  auto anthropic = provider();
  const Outcome outcome = run_complete(io, *anthropic, user_request("hi"));
  const auto error = outcome.provider_error();
  ASSERT_TRUE(error);
  EXPECT_THAT(error->what(), HasSubstr("The Anthropic API still failed after 4 attempts"));
  EXPECT_THAT(error->what(), HasSubstr("HTTP 529 (overloaded_error): Overloaded."));
  EXPECT_EQ(server.requests().size(), 4u);
}

TEST_F(AnthropicProviderTest, AStalledStreamEndsWithAVisibleError) {
  FakeResponse stalled = FakeResponse::event_stream({{std::string(kMessageStart)}, {std::string(kText)}});
  stalled.stall = true;
  server.enqueue(std::move(stalled));
  server.enqueue(text_answer());
  ProviderSettings settings = test_settings(server.url(""), "claude-test");
  settings.http.idle_timeout = milliseconds(300);
  auto anthropic = provider(std::move(settings));
  const Outcome outcome = run_complete(io, *anthropic, user_request("hi"));
  const auto error = outcome.provider_error();
  ASSERT_TRUE(error);
  EXPECT_THAT(error->what(), HasSubstr("stalled"));
  EXPECT_LT(outcome.elapsed, std::chrono::seconds(2));
  EXPECT_EQ(server.requests().size(), 1u) << "a stream that stalled is not asked again";
}

// Issue 27: bytes are not progress. A stream that trickles comments, or a data line that
// never ends, resets the idle timeout forever; the whole call's deadline ends it.
class TricklingStreamTest : public AnthropicProviderTest {
 protected:
  void expect_given_up(std::vector<BodyPiece> pieces) {
    server.enqueue(FakeResponse::event_stream(std::move(pieces)));
    ProviderSettings settings = test_settings(server.url(""), "claude-test");
    settings.http.call_timeout = milliseconds(1000);
    auto anthropic = provider(std::move(settings));
    const Outcome outcome = run_complete(io, *anthropic, user_request("hi"));
    const auto error = outcome.provider_error();
    ASSERT_TRUE(error);
    EXPECT_THAT(error->what(), HasSubstr("did not finish its reply within 1 s"));
    EXPECT_LT(outcome.elapsed, std::chrono::seconds(3));
    EXPECT_EQ(server.requests().size(), 1u) << "a trickling stream is not asked again";
  }
};

TEST_F(TricklingStreamTest, CommentsOnlyEndAtTheCallsDeadline) {
  std::vector<BodyPiece> pieces = {{std::string(kMessageStart)}};
  for (int index = 0; index < 40; ++index) pieces.push_back({": keep-alive\n", milliseconds(100)});
  expect_given_up(std::move(pieces));
}

TEST_F(TricklingStreamTest, ADataLineThatNeverEndsEndsAtTheCallsDeadline) {
  std::vector<BodyPiece> pieces = {{std::string(kMessageStart)}, {"data: {\"type\": \"ping"}};
  for (int index = 0; index < 40; ++index) pieces.push_back({"x", milliseconds(100)});
  expect_given_up(std::move(pieces));
}

TEST_F(AnthropicProviderTest, AStopInTheMiddleOfTheStreamEndsItAtOnce) {
  FakeResponse stalled = FakeResponse::event_stream({{std::string(kMessageStart)}, {std::string(kText)}});
  stalled.stall = true;
  server.enqueue(std::move(stalled));
  auto anthropic = provider();  // idle_timeout 5 s: only the stop can end it sooner
  const Outcome outcome = run_complete(io, *anthropic, user_request("hi"), milliseconds(200));
  EXPECT_TRUE(outcome.cancelled()) << outcome.message();
  EXPECT_LT(outcome.elapsed, milliseconds(1200)) << "ended within 1 s of the stop";
  EXPECT_EQ(server.requests().size(), 1u);
}

TEST_F(AnthropicProviderTest, TheKeyNeverShowsInAnError) {
  server.enqueue(anthropic_error(401, "authentication_error", "invalid x-api-key: " + std::string(kApiKey)));
  auto anthropic = provider();
  const Outcome outcome = run_complete(io, *anthropic, user_request("hi"));
  const auto error = outcome.provider_error();  // checks the key is absent
  ASSERT_TRUE(error);
  EXPECT_THAT(error->what(), HasSubstr("invalid x-api-key: [redacted]"));
  EXPECT_THAT(error->what(), HasSubstr("Check the API key"));
}

TEST_F(AnthropicProviderTest, AServerThatIsNotThereIsRetriedThenNamed) {
  std::string gone_url;
  {
    FakeHttpServer gone;
    gone_url = gone.url("");
  }
  auto anthropic = provider(test_settings(gone_url, "claude-test"));
  const Outcome outcome = run_complete(io, *anthropic, user_request("hi"));
  const auto error = outcome.provider_error();
  ASSERT_TRUE(error);
  EXPECT_THAT(error->what(), HasSubstr("still failed after 4 attempts"));
  EXPECT_THAT(error->what(), HasSubstr("could not be reached"));
}

TEST(AnthropicProviderCreateTest, RefusesPlainHttpBeyondLoopbackAndAMissingModel) {
  asio::io_context io;
  auto remote = AnthropicProvider::create(io.get_executor(), testing::test_settings("http://example.com", "claude-test"));
  ASSERT_FALSE(remote.ok());
  EXPECT_THAT(remote.error().what, HasSubstr("must use https"));
  auto nameless = AnthropicProvider::create(io.get_executor(), testing::test_settings("", ""));
  ASSERT_FALSE(nameless.ok());
  EXPECT_THAT(nameless.error().what, HasSubstr("needs a model name"));
  EXPECT_TRUE(AnthropicProvider::create(io.get_executor(), testing::test_settings("", "claude-test")).ok());
}

}  // namespace
}  // namespace deskd::model
