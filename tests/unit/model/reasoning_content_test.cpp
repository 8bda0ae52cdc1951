// reasoning_content from OpenAI-compatible chat-completions servers (DeepSeek, vLLM): the
// stream's reasoning is kept in the transcript (not shown as the reply), and goes back as
// DeepSeek's thinking-mode guide asks (https://api-docs.deepseek.com/guides/thinking_mode,
// "Multi-turn Conversation"): on every assistant message of an exchange in which tools were
// called, never on a plain reply (which its deepseek-reasoner guide answers with HTTP 400).
// The stream is openai_recorded_streams.h's DeepSeek fixture; the agent loop runs over the
// real openai provider and the fake server.

#include <boost/asio.hpp>
#include <boost/json.hpp>

#include <gtest/gtest.h>

#include "runner/model/anthropic_provider.h"
#include "runner/model/model_turn_runner.h"
#include "runner/model/openai_provider.h"
#include "runner/model/openai_stream.h"
#include "runner/tools/tool_registry.h"
#include "tests/unit/model/fake_http_server.h"
#include "tests/unit/model/openai_recorded_streams.h"
#include "tests/unit/model/provider_test_support.h"
#include "tests/unit/model/stream_test_support.h"

namespace deskd::model {
namespace {

namespace asio = boost::asio;
namespace json = boost::json;
using testing::FakeHttpServer;
using testing::FakeResponse;

json::object reasoning_block_of(std::string text) {
  return {{"type", kReasoningContentBlock}, {"text", std::move(text)}};
}
json::object plain_text_block(std::string text) { return {{"type", "text"}, {"text", std::move(text)}}; }

TEST(ReasoningContentTest, TheStreamsReasoningIsKeptBeforeTheCallItLedTo) {
  for (std::size_t piece : {1u, 31u, 100000u}) {
    OpenAiStreamAssembler assembler("The OpenAI-compatible API at 127.0.0.1:8000", 1024);
    const ModelResponse response = testing::assemble(assembler, testing::kDeepSeekReasoningToolCallStream, piece);
    EXPECT_EQ(response.text, "") << "the reasoning is not the reply";
    EXPECT_EQ(response.stop_reason, "tool_use");
    ASSERT_EQ(response.tool_calls.size(), 1u);
    EXPECT_EQ(
        response.content,
        (json::array{reasoning_block_of("The user wants the files. I should run ls."),
                     {{"type", "tool_use"}, {"id", "call_00_ls"}, {"name", "bash"}, {"input", {{"command", "ls"}}}}}));
    // DeepSeek's cache hits are cache reads; the reasoning tokens are among the output.
    EXPECT_EQ(response.usage, (desk::Usage{44, 40, 256, 0}));
  }
}

TEST(ReasoningContentTest, ItGoesBackInToolExchangesOnly) {
  ModelRequest request;
  request.messages = json::array{
      {{"role", "user"}, {"content", json::array{plain_text_block("List the folder.")}}},
      {{"role", "assistant"},
       {"content",
        json::array{reasoning_block_of("I should run ls."),
                    {{"type", "tool_use"}, {"id", "call_1"}, {"name", "bash"}, {"input", {{"command", "ls"}}}}}}},
      {{"role", "user"},
       {"content",
        json::array{
            {{"type", "tool_result"}, {"tool_use_id", "call_1"}, {"content", "plan.md"}, {"is_error", false}}}}},
      {{"role", "assistant"},
       {"content", json::array{reasoning_block_of("One file."), plain_text_block("plan.md is there.")}}},
      {{"role", "user"}, {"content", json::array{plain_text_block("Thanks. And 2+2?")}}},
      {{"role", "assistant"}, {"content", json::array{reasoning_block_of("Simple sum."), plain_text_block("4")}}},
      {{"role", "user"}, {"content", json::array{plain_text_block("Good.")}}}};
  const json::array messages = openai_messages(request);
  ASSERT_EQ(messages.size(), 7u);
  EXPECT_EQ(messages[1].at("reasoning_content"), "I should run ls.") << "it called a tool";
  EXPECT_EQ(messages[3].at("reasoning_content"), "One file.") << "it answered the tool's result";
  EXPECT_FALSE(messages[5].as_object().contains("reasoning_content"))
      << "a plain reply: " << json::serialize(messages[5]);
  EXPECT_EQ(messages[5].at("content"), "4");
}

TEST(ReasoningContentTest, TheMessagesApiNeverSeesIt) {
  ModelRequest request;
  request.purpose = Purpose::turn;
  request.tools.push_back({"bash", "Runs a command.", json::object{{"type", "object"}}});
  request.messages = json::array{{{"role", "user"}, {"content", json::array{plain_text_block("Hi.")}}},
                                 {{"role", "assistant"},
                                  {"content", json::array{reasoning_block_of("Greet."),
                                                          {{"type", kOpenAiReasoningBlock}, {"item", json::object{}}},
                                                          plain_text_block("Hello.")}}},
                                 {{"role", "user"}, {"content", json::array{plain_text_block("Go on.")}}}};
  ProviderSettings settings = testing::test_settings("", "claude-sonnet-4-5");
  const json::object body = anthropic_request_body(request, settings);
  EXPECT_EQ(body.at("messages").at(1).at("content"), (json::array{plain_text_block("Hello.")}))
      << "another API's reasoning is a block type the Messages API refuses";
}

// A tool that lists a pretend folder.
class ReasoningFolderTool final : public tools::Tool {
 public:
  std::string_view name() const override { return "bash"; }
  std::string_view description() const override { return "Runs a command."; }
  std::string_view input_schema() const override { return R"({"type":"object"})"; }
  asio::awaitable<tools::ToolResult> call(const json::object&) override {
    co_return tools::ToolResult::success("plan.md");
  }
};

class ReasoningTurnContext final : public desk::TurnContext {
 public:
  std::vector<desk::Trigger> take_steering() override { return {}; }
  void publish(const std::string&, json::object) override {}
  void progress() override {}
};

TEST(ReasoningContentTest, ATurnSendsTheReasoningBackWithTheToolResult) {
  FakeHttpServer server;
  server.enqueue(FakeResponse::event_stream({{testing::kDeepSeekReasoningToolCallStream}}));
  server.enqueue(FakeResponse::event_stream({{testing::deepseek_chunk(R"({"role":"assistant","content":"plan.md"})") +
                                              testing::deepseek_chunk("{}", R"("stop")") + "data: [DONE]\n\n"}}));
  asio::io_context io;
  auto provider =
      OpenAiProvider::create(io.get_executor(), testing::test_settings(server.url("/v1"), "deepseek-reasoner"));
  ASSERT_TRUE(provider.ok()) << provider.error().what;
  auto registry = std::make_shared<tools::ToolRegistry>();
  registry->add(std::make_unique<ReasoningFolderTool>());
  ModelTurnRunner runner(std::shared_ptr<ModelProvider>(std::move(provider).value()), registry,
                         TurnRunnerSettings{"You run the test desk."});
  ReasoningTurnContext context;
  auto future = asio::co_spawn(io, runner.run_turn("List the folder.", context), asio::use_future);
  io.run();
  EXPECT_EQ(future.get().reply, "plan.md");
  ASSERT_EQ(server.requests().size(), 2u);
  const json::value second = json::parse(server.requests()[1].body);
  const json::array& messages = second.at("messages").as_array();
  ASSERT_GE(messages.size(), 4u);
  EXPECT_EQ(messages[2].at("role"), "assistant");
  EXPECT_EQ(messages[2].at("reasoning_content"), "The user wants the files. I should run ls.");
  EXPECT_EQ(messages[3].at("role"), "tool");
}

}  // namespace
}  // namespace deskd::model
