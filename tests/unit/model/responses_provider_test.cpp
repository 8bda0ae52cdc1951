// The openai provider with api = "responses" against a fake Responses API on loopback: it
// posts to {base_url}/responses with the key as a bearer token; the request has the fields
// and types of openai-python's ResponseCreateParams (src/openai/types/responses/
// response_create_params.py, easy_input_message_param.py, function_tool_param.py,
// response_function_tool_call_param.py, response_input_param.py's FunctionCallOutput,
// response_reasoning_item_param.py); a whole conversation goes back with store = false
// (reasoning with its encrypted content, calls and their outputs by call_id); a 429 with
// retry-after is waited out as with chat completions; the key never shows.

#include "runner/model/responses_provider.h"

#include <boost/asio.hpp>
#include <boost/json.hpp>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "runner/model/providers.h"
#include "tests/unit/model/fake_http_server.h"
#include "tests/unit/model/provider_test_support.h"
#include "tests/unit/model/request_shape.h"
#include "tests/unit/model/responses_recorded_streams.h"
#include "tests/unit/model/stream_test_support.h"

namespace deskd::model {
namespace {

namespace asio = boost::asio;
namespace json = boost::json;
using testing::expect_sdk_shape;
using testing::FakeHttpServer;
using testing::FakeResponse;
using ::testing::HasSubstr;
using testing::JsonKind;
using testing::Outcome;
using testing::run_complete;
using testing::test_settings;
using testing::user_request;

FakeResponse responses_fixture_reply(std::string_view wire) {
  return FakeResponse::event_stream({{std::string(wire)}});
}

// Every field deskd sends, checked against the SDK's request types.
void expect_responses_request_shape(const json::object& body) {
  expect_sdk_shape(body,
                   {{"model", JsonKind::string, true},
                    {"input", JsonKind::string_or_array, true},
                    {"instructions", JsonKind::string},
                    {"tools", JsonKind::array},
                    {"stream", JsonKind::boolean},
                    {"store", JsonKind::boolean},
                    {"include", JsonKind::array},
                    {"max_output_tokens", JsonKind::integer},
                    {"temperature", JsonKind::number}},
                   "ResponseCreateParams");
  for (const json::value& item : body.at("input").as_array()) {
    const json::object& fields = item.as_object();
    const std::string type = fields.contains("type") ? std::string(fields.at("type").as_string()) : "message";
    if (type == "message") {
      expect_sdk_shape(
          fields,
          {{"role", JsonKind::string, true}, {"content", JsonKind::string_or_array, true}, {"type", JsonKind::string}},
          "EasyInputMessageParam");
    } else if (type == "function_call") {
      expect_sdk_shape(fields,
                       {{"arguments", JsonKind::string, true},
                        {"call_id", JsonKind::string, true},
                        {"name", JsonKind::string, true},
                        {"type", JsonKind::string, true}},
                       "ResponseFunctionToolCallParam");
    } else if (type == "function_call_output") {
      expect_sdk_shape(fields,
                       {{"call_id", JsonKind::string, true},
                        {"output", JsonKind::string_or_array, true},
                        {"type", JsonKind::string, true}},
                       "FunctionCallOutput");
    } else if (type == "reasoning") {
      // ResponseReasoningItemParam's id is left out on purpose (see responses_stream.cpp).
      expect_sdk_shape(fields,
                       {{"summary", JsonKind::array, true},
                        {"type", JsonKind::string, true},
                        {"encrypted_content", JsonKind::string, true}},
                       "ResponseReasoningItemParam");
    } else {
      ADD_FAILURE() << "an input item of a type deskd never sends: " << json::serialize(fields);
    }
  }
  if (body.contains("tools")) {
    for (const json::value& tool : body.at("tools").as_array()) {
      expect_sdk_shape(tool.as_object(),
                       {{"name", JsonKind::string, true},
                        {"parameters", JsonKind::object, true},
                        {"strict", JsonKind::boolean, true},
                        {"type", JsonKind::string, true},
                        {"description", JsonKind::string}},
                       "FunctionToolParam");
    }
  }
}

ModelRequest turn_with_tools(std::string text) {
  ModelRequest request = user_request(std::move(text));
  request.tools.push_back({"bash", "Runs a command.", json::object{{"type", "object"}}});
  return request;
}

class ResponsesProviderTest : public ::testing::Test {
 protected:
  std::unique_ptr<ResponsesProvider> provider(ProviderSettings settings) {
    auto created = ResponsesProvider::create(io.get_executor(), std::move(settings));
    EXPECT_TRUE(created.ok()) << (created.ok() ? "" : created.error().what);
    return std::move(created).value();
  }
  std::unique_ptr<ResponsesProvider> provider() { return provider(test_settings(server.url("/v1"), "o3-pro")); }
  json::object request_body(std::size_t index) const {
    return json::parse(server.requests().at(index).body).as_object();
  }

  FakeHttpServer server;
  asio::io_context io;
};

TEST_F(ResponsesProviderTest, ATextAnswerFromTheSpecsStream) {
  server.enqueue(responses_fixture_reply(testing::kResponsesTextStream));
  auto responses = provider();
  const Outcome outcome = run_complete(io, *responses, turn_with_tools("Hello!"));
  ASSERT_TRUE(outcome.response) << outcome.message();
  EXPECT_EQ(outcome.response->text, "Hi there! How can I assist you today?");
  EXPECT_EQ(outcome.response->model, "gpt-5.4");
  EXPECT_EQ(responses->describe(), "openai:o3-pro (responses)");

  const auto requests = server.requests();
  ASSERT_EQ(requests.size(), 1u);
  EXPECT_EQ(requests[0].method, "POST");
  EXPECT_EQ(requests[0].target, "/v1/responses");
  EXPECT_EQ(requests[0].header("authorization"), "Bearer " + std::string(testing::kApiKey));
  const json::object body = request_body(0);
  expect_responses_request_shape(body);
  EXPECT_EQ(body.at("model"), "o3-pro");
  EXPECT_EQ(body.at("instructions"), "You are a trading desk.");
  EXPECT_EQ(body.at("input"), (json::array{{{"role", "user"}, {"content", "Hello!"}}}));
  EXPECT_EQ(body.at("stream"), true);
  EXPECT_EQ(body.at("store"), false) << "nothing is kept on OpenAI's side";
  EXPECT_EQ(body.at("include"), (json::array{"reasoning.encrypted_content"}));
  EXPECT_EQ(body.at("max_output_tokens"), 1024);
  EXPECT_EQ(body.at("tools"), (json::array{{{"type", "function"},
                                            {"name", "bash"},
                                            {"description", "Runs a command."},
                                            {"parameters", {{"type", "object"}}},
                                            {"strict", false}}}));
}

TEST_F(ResponsesProviderTest, TheWholeConversationGoesBackWithReasoningCallsAndOutputs) {
  server.enqueue(responses_fixture_reply(testing::kResponsesToolCallStream));
  server.enqueue(responses_fixture_reply(testing::responses_text_stream("plan.md is there.")));
  auto responses = provider();
  ModelRequest first = turn_with_tools("List the folder.");
  const Outcome called = run_complete(io, *responses, first);
  ASSERT_TRUE(called.response) << called.message();

  // The transcript as the turn runner keeps it: the reply's blocks, then the results.
  ModelRequest second = turn_with_tools("List the folder.");
  second.messages.push_back(json::object{{"role", "assistant"}, {"content", called.response->content}});
  second.messages.push_back(json::object{
      {"role", "user"},
      {"content", json::array{{{"type", "tool_result"},
                               {"tool_use_id", "call_unLAR8MvFNptuiZK6K6HCy5k"},
                               {"content", "plan.md"},
                               {"is_error", false}},
                              {{"type", "text"}, {"text", "Message from the user while you worked: hurry"}}}}});
  const Outcome answered = run_complete(io, *responses, second);
  ASSERT_TRUE(answered.response) << answered.message();
  EXPECT_EQ(answered.response->text, "plan.md is there.");

  const json::object body = request_body(1);
  expect_responses_request_shape(body);
  EXPECT_EQ(
      body.at("input"),
      (json::array{
          {{"role", "user"}, {"content", "List the folder."}},
          {{"type", "reasoning"},
           {"summary", json::array{{{"type", "summary_text"},
                                    {"text", "**Listing the folder** The user wants the files; I will run ls."}}}},
           {"encrypted_content", "gAAAAABoSr2vENCRYPTEDREASONINGx9Q=="}},
          {{"type", "function_call"},
           {"call_id", "call_unLAR8MvFNptuiZK6K6HCy5k"},
           {"name", "bash"},
           {"arguments", R"({"command":"ls"})"}},
          {{"type", "function_call_output"}, {"call_id", "call_unLAR8MvFNptuiZK6K6HCy5k"}, {"output", "plan.md"}},
          {{"role", "user"}, {"content", "Message from the user while you worked: hurry"}}}));
}

TEST_F(ResponsesProviderTest, ASideQuestionSendsNoToolsAndToolsAsText) {
  server.enqueue(responses_fixture_reply(testing::responses_text_stream("Because.")));
  auto responses = provider();
  ModelRequest side = user_request("List the folder.");
  side.purpose = Purpose::side_question;
  side.messages.push_back(json::object{
      {"role", "assistant"},
      {"content",
       json::array{{{"type", kOpenAiReasoningBlock},
                    {"item", {{"type", "reasoning"}, {"summary", json::array{}}, {"encrypted_content", "x"}}}},
                   {{"type", "tool_use"}, {"id", "call_1"}, {"name", "bash"}, {"input", {{"command", "ls"}}}}}}});
  side.messages.push_back(json::object{
      {"role", "user"},
      {"content",
       json::array{{{"type", "tool_result"}, {"tool_use_id", "call_1"}, {"content", "plan.md"}, {"is_error", true}}}}});
  side.messages.push_back(json::object{{"role", "user"}, {"content", "why?"}});
  ASSERT_TRUE(run_complete(io, *responses, side).response);
  const json::object body = request_body(0);
  expect_responses_request_shape(body);
  EXPECT_FALSE(body.contains("tools"));
  EXPECT_EQ(body.at("input"),
            (json::array{{{"role", "user"}, {"content", "List the folder."}},
                         {{"role", "assistant"}, {"content", R"([I called bash with {"command":"ls"}])"}},
                         {{"role", "user"}, {"content", "[bash failed: plan.md]"}},
                         {{"role", "user"}, {"content", "why?"}}}));
}

TEST_F(ResponsesProviderTest, AModelThatDoesNotReasonIsNotAskedForEncryptedContent) {
  server.enqueue(responses_fixture_reply(testing::kResponsesTextStream));
  ProviderSettings settings = test_settings(server.url("/v1"), "gpt-4.1");
  settings.openai_encrypted_reasoning = false;
  auto responses = provider(std::move(settings));
  ASSERT_TRUE(run_complete(io, *responses, user_request("Hello!")).response);
  EXPECT_FALSE(request_body(0).contains("include"));
}

TEST_F(ResponsesProviderTest, A429WithRetryAfterIsWaitedOutThenAnswered) {
  FakeResponse limited = FakeResponse::json(
      429, R"({"error":{"message":"Rate limit reached for o3-pro. Key )" + std::string(testing::kApiKey) +
               R"(","type":"requests","param":null,"code":"rate_limit_exceeded"}})");
  limited.headers.push_back({"retry-after-ms", "40"});
  server.enqueue(std::move(limited));
  server.enqueue(responses_fixture_reply(testing::kResponsesTextStream));
  auto responses = provider();
  std::vector<std::string> notices;
  ModelRequest request = user_request("Hello!");
  request.on_retry = [&notices](const std::string& notice) { notices.push_back(notice); };
  const Outcome outcome = run_complete(io, *responses, std::move(request));
  ASSERT_TRUE(outcome.response) << outcome.message();
  EXPECT_EQ(server.requests().size(), 2u);
  ASSERT_EQ(notices.size(), 1u);
  EXPECT_THAT(notices[0], HasSubstr("The Responses API at 127.0.0.1"));
  EXPECT_THAT(notices[0], HasSubstr("Retrying in 0.0 s"));
  EXPECT_EQ(notices[0].find(testing::kApiKey), std::string::npos) << notices[0];
}

TEST_F(ResponsesProviderTest, AFailedResponseIsRetriedAndARefusalIsNot) {
  server.enqueue(responses_fixture_reply(testing::kResponsesFailedStream));
  server.enqueue(responses_fixture_reply(testing::kResponsesRefusalStream));
  auto responses = provider();
  const Outcome outcome = run_complete(io, *responses, user_request("Something bad."));
  const auto failure = outcome.provider_error();
  ASSERT_TRUE(failure);
  EXPECT_TRUE(failure->refused());
  ASSERT_TRUE(failure->billed());
  EXPECT_EQ(failure->billed()->model, "gpt-5.4");
  EXPECT_EQ(server.requests().size(), 2u) << "the server_error once, the refusal never again";
}

TEST(ResponsesProviderTableTest, ApiResponsesMakesTheResponsesProvider) {
  asio::io_context io;
  const ProviderKind* openai = find_provider_kind("openai");
  ASSERT_NE(openai, nullptr);
  EXPECT_TRUE(openai->responses_api);
  EXPECT_FALSE(find_provider_kind("anthropic")->responses_api);
  ProviderSettings settings = test_settings("http://127.0.0.1:9/v1", "gpt-5-pro");
  settings.openai_api = "responses";
  auto made = openai->make(io.get_executor(), settings);
  ASSERT_TRUE(made.ok()) << made.error().what;
  EXPECT_EQ((*made)->describe(), "openai:gpt-5-pro (responses)");
  settings.openai_api = "chat_completions";
  EXPECT_EQ((*openai->make(io.get_executor(), settings))->describe(), "openai:gpt-5-pro");
  settings.base_url = "http://api.example.com/v1";
  settings.openai_api = "responses";
  EXPECT_FALSE(openai->make(io.get_executor(), settings).ok()) << "plain http beyond loopback";
}

}  // namespace
}  // namespace deskd::model
