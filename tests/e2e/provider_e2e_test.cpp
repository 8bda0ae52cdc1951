// deskd serve with the `openai` provider pointed at a fake Chat Completions server on
// loopback, driven by deskctl ask: the real wire format both ways, a tool call streamed in
// pieces and run in the sandbox, usage and cost, and the API key nowhere but in the
// request's Authorization header — not in the sandbox, the log, the events or the journal;
// and a server that sends no usage still has the session kept within context_window.

#include <gtest/gtest.h>

#include <boost/json.hpp>

#include <fstream>
#include <sstream>

#include "e2e/daemon_fixture.h"
#include "unit/model/fake_http_server.h"

namespace deskd::e2e {
namespace {

namespace json = boost::json;
using model::testing::BodyPiece;
using model::testing::FakeHttpServer;
using model::testing::FakeResponse;

constexpr const char* kKey = "sk-e2e-7d1c0ffee-secret";

std::string chunk(const json::object& body) { return "data: " + json::serialize(body) + "\n\n"; }

json::object delta(json::object content, json::value finish_reason = nullptr) {
  return {{"id", "c1"},
          {"object", "chat.completion.chunk"},
          {"model", "gpt-test"},
          {"choices", json::array{json::object{{"index", 0}, {"delta", std::move(content)}, {"finish_reason", finish_reason}}}}};
}

json::object tool_piece(json::object function, bool first) {
  json::object call{{"index", 0}, {"function", std::move(function)}};
  if (first) {
    call["id"] = "call_1";
    call["type"] = "function";
  }
  return delta({{"tool_calls", json::array{call}}});
}

json::object usage(int prompt, int completion) {
  return {{"id", "c1"},
          {"object", "chat.completion.chunk"},
          {"model", "gpt-test"},
          {"choices", json::array{}},
          {"usage", json::object{{"prompt_tokens", prompt}, {"completion_tokens", completion}, {"total_tokens", prompt + completion}}}};
}

std::string read_all(const std::string& path) {
  std::ifstream file(path);
  std::stringstream text;
  text << file.rdbuf();
  return text.str();
}

TEST(ProviderE2eTest, AnOpenAiDeskWorksThroughTheFakeServerAndItsKeyStaysOutOfEverything) {
  FakeHttpServer server;
  // The first reply streams a bash call in pieces; the second answers in text.
  server.enqueue(FakeResponse::event_stream({
      {chunk(delta({{"role", "assistant"}, {"content", "Checking the sandbox."}}))},
      {chunk(tool_piece({{"name", "bash"}, {"arguments", ""}}, true))},
      {chunk(tool_piece({{"arguments", "{\"command\": \"printenv DESKD_E2E_KEY || "}}, false)), std::chrono::milliseconds(20)},
      {chunk(tool_piece({{"arguments", "echo no-key-in-sandbox\"}"}}, false))},
      {chunk(delta(json::object{}, "tool_calls"))},
      {chunk(usage(1000, 50))},
      {"data: [DONE]\n\n"},
  }));
  server.enqueue(FakeResponse::event_stream({
      {chunk(delta({{"role", "assistant"}, {"content", "All done: "}}))},
      {chunk(delta({{"content", "the key is not here."}}))},
      {chunk(delta(json::object{}, "stop"))},
      {chunk(usage(1200, 10))},
      {"data: [DONE]\n\n"},
  }));

  ServeDaemon daemon({DeskSetup{.name = "alpha",
                                .script = "",
                                .tables = "[desk.model.prices.\"gpt-test\"]\ninput = 2.0\noutput = 8.0\n",
                                .model = "provider = \"openai\"\nmodel = \"gpt-test\"\nbase_url = \"" + server.url("/v1") +
                                         "\"\napi_key_variable = \"DESKD_E2E_KEY\"\n"}});
  std::string why;
  ASSERT_TRUE(daemon.start({std::string("DESKD_E2E_KEY=") + kKey}, &why)) << why;

  const DeskctlResult asked = daemon.deskctl({"ask", "alpha", "Is the key in your sandbox?"});
  EXPECT_EQ(asked.exit_code, 0) << asked.output << asked.error_output;
  EXPECT_NE(asked.output.find("Checking the sandbox."), std::string::npos) << asked.output;
  EXPECT_NE(asked.output.find("no-key-in-sandbox"), std::string::npos) << asked.output;
  EXPECT_NE(asked.output.find("All done: the key is not here."), std::string::npos) << asked.output;

  const auto requests = server.requests();
  ASSERT_EQ(requests.size(), 2u);
  EXPECT_EQ(requests[0].method, "POST");
  EXPECT_EQ(requests[0].target, "/v1/chat/completions");
  EXPECT_EQ(requests[0].header("authorization"), std::string("Bearer ") + kKey);
  const json::object first = json::parse(requests[0].body).as_object();
  EXPECT_EQ(first.at("model"), "gpt-test");
  EXPECT_EQ(first.at("stream"), true);
  EXPECT_FALSE(first.at("tools").as_array().empty());
  // The tool's result goes back as a role "tool" message answering call_1.
  const json::value second = json::parse(requests[1].body);
  const json::array& messages = second.at("messages").as_array();
  bool result_sent = false;
  for (const auto& message : messages) {
    const json::object& object = message.as_object();
    if (object.at("role") == "tool" && object.at("tool_call_id") == "call_1") {
      result_sent = std::string(object.at("content").as_string()).find("no-key-in-sandbox") != std::string::npos;
    }
  }
  EXPECT_TRUE(result_sent) << requests[1].body;

  // Usage and cost from the price table: 2,200 in at $2/M and 60 out at $8/M.
  const DeskctlResult usage_answer = daemon.deskctl({"ask", "alpha", "/usage"});
  EXPECT_EQ(usage_answer.exit_code, 0);
  EXPECT_NE(usage_answer.output.find("gpt-test"), std::string::npos) << usage_answer.output;
  EXPECT_NE(usage_answer.output.find("2,200 in"), std::string::npos) << usage_answer.output;

  const DeskctlResult events = daemon.deskctl({"--json", "events", "alpha"});
  EXPECT_EQ(daemon.stop(), 0);
  for (const auto& [where, text] : std::vector<std::pair<std::string, std::string>>{
           {"deskctl's output", asked.output + usage_answer.output},
           {"the events", events.output},
           {"deskd's log", daemon.process().error_output()},
           {"the journal", read_all(daemon.journal_path("alpha"))},
           {"the session", read_all(daemon.session_path("alpha"))}}) {
    EXPECT_EQ(text.find(kKey), std::string::npos) << "the API key leaked into " << where;
  }
  EXPECT_FALSE(read_all(daemon.journal_path("alpha")).empty());
}

std::string openai_model(const FakeHttpServer& server, std::string extra = "") {
  return "provider = \"openai\"\nmodel = \"gpt-test\"\nbase_url = \"" + server.url("/v1") +
         "\"\napi_key_variable = \"DESKD_E2E_KEY\"\nmax_retries = 0\n" + extra;
}

std::string text_reply(const std::string& text) {
  return chunk(delta({{"role", "assistant"}, {"content", text}})) + chunk(delta(json::object{}, "stop")) +
         chunk(usage(10, 5)) + "data: [DONE]\n\n";
}

TEST(ProviderE2eTest, AStalledStreamEndsTheTurnVisiblyAndTheSteeringWaitingForItRunsNext) {
  FakeHttpServer server;
  FakeResponse stalled = FakeResponse::event_stream({{chunk(delta({{"role", "assistant"}, {"content", "Thinking"}}))}});
  stalled.stall = true;
  server.enqueue(stalled);
  server.enqueue(FakeResponse::event_stream({{text_reply("Steering handled.")}}));
  ServeDaemon daemon({DeskSetup{.name = "alpha", .script = "", .model = openai_model(server, "idle_timeout_seconds = 2\n")}});
  std::string why;
  ASSERT_TRUE(daemon.start({std::string("DESKD_E2E_KEY=") + kKey}, &why)) << why;

  auto follower = daemon.follow("alpha");
  ASSERT_TRUE(follower);
  auto asked = daemon.deskctl_in_background({"ask", "alpha", "Think hard."});
  ASSERT_TRUE(follower->wait_for_event([](const json::object& event) { return event.at("kind") == "TURN_STARTED"; }));
  const DeskctlResult steered = daemon.deskctl({"send", "alpha", "Also check the VIX."});
  ASSERT_EQ(steered.exit_code, 0) << steered.error_output;
  const std::string steering_trigger = steered.output.substr(0, steered.output.find('\n'));

  const DeskctlResult first = asked->finish(std::chrono::seconds(30));
  EXPECT_EQ(first.exit_code, 1);
  EXPECT_NE(first.output.find("turn failed"), std::string::npos) << first.output;
  EXPECT_NE(first.output.find("sent nothing for 2 s"), std::string::npos) << first.output;
  EXPECT_LT(first.elapsed, std::chrono::seconds(15));
  // The message that arrived during the stalled turn was never delivered: it runs next.
  auto finished = follower->wait_for_event([&](const json::object& event) {
    return event.at("kind") == "TURN_FINISHED" && event.at("data").at("trigger") == json::value(steering_trigger);
  });
  ASSERT_TRUE(finished) << "the steering message did not run after the stalled turn";
  EXPECT_EQ(finished->at("data").at("reply"), "Steering handled.");
  const auto requests = server.requests();
  ASSERT_EQ(requests.size(), 2u);
  EXPECT_NE(requests[1].body.find("Also check the VIX."), std::string::npos);
}

TEST(ProviderE2eTest, AnApiErrorReachesTheUserInTurnFailedAndIsNotRetried) {
  FakeHttpServer server;
  server.enqueue(FakeResponse::json(
      400, R"({"error":{"message":"Invalid value for 'max_tokens': too large.","type":"invalid_request_error"}})"));
  ServeDaemon daemon({DeskSetup{.name = "alpha", .script = "", .model = openai_model(server)}});
  std::string why;
  ASSERT_TRUE(daemon.start({std::string("DESKD_E2E_KEY=") + kKey}, &why)) << why;
  const DeskctlResult asked = daemon.deskctl({"ask", "alpha", "hello"});
  EXPECT_EQ(asked.exit_code, 1);
  EXPECT_NE(asked.output.find("Invalid value for 'max_tokens': too large."), std::string::npos) << asked.output;
  EXPECT_EQ(server.requests().size(), 1u);
}

TEST(ProviderE2eTest, AReplyCutByItsLimitIsShownAsCutAndAskExitsWithFour) {
  FakeHttpServer server;
  // finish_reason "length": the reply hit max_completion_tokens (ChatCompletionChunk in
  // openai-python: "`length` if the maximum number of tokens specified in the request was reached").
  server.enqueue(FakeResponse::event_stream({{chunk(delta({{"role", "assistant"}, {"content", "The levels are: pivot 24150, sup"}})) +
                                              chunk(delta(json::object{}, "length")) + chunk(usage(10, 16)) + "data: [DONE]\n\n"}}));
  ServeDaemon daemon({DeskSetup{.name = "alpha", .script = "", .model = openai_model(server, "max_tokens = 16\n")}});
  std::string why;
  ASSERT_TRUE(daemon.start({std::string("DESKD_E2E_KEY=") + kKey}, &why)) << why;
  const DeskctlResult asked = daemon.deskctl({"ask", "alpha", "Levels?"});
  EXPECT_EQ(asked.exit_code, 4) << asked.output << asked.error_output;
  EXPECT_NE(asked.output.find("the model's reply was cut at its max_tokens limit (16)"), std::string::npos) << asked.output;
  EXPECT_NE(asked.output.find("turn finished, but its reply was cut (max_tokens): The levels are: pivot 24150, sup"),
            std::string::npos)
      << asked.output;
  ASSERT_EQ(server.requests().size(), 1u);
  EXPECT_EQ(json::parse(server.requests()[0].body).at("max_completion_tokens"), 16);
}

TEST(ProviderE2eTest, AServerThatSendsNoUsageStillHasItsSessionKeptWithinTheContextWindow) {
  // A local OpenAI-compatible server that ignores stream_options: no usage chunk, ever.
  FakeHttpServer server;
  server.set_fallback([](const model::testing::RecordedRequest& request) {
    const bool summary = request.body.find("Summarise everything above") != std::string::npos;
    const std::string text = summary ? "SUMMARY: the user sent numbered notes." : "Noted. " + std::string(1000, 'r');
    return FakeResponse::event_stream({{chunk(delta({{"role", "assistant"}, {"content", text}})) +
                                        chunk(delta(json::object{}, "stop")) + "data: [DONE]\n\n"}});
  });
  ServeDaemon daemon({DeskSetup{.name = "alpha", .script = "", .model = openai_model(server, "context_window = 8000\n")}});
  std::string why;
  ASSERT_TRUE(daemon.start({std::string("DESKD_E2E_KEY=") + kKey}, &why)) << why;
  // 300 turns of about 4 KB each: the window is 32 KB (4 bytes a token).
  for (int turn = 0; turn < 300; ++turn) {
    const DeskctlResult asked =
        daemon.deskctl({"ask", "alpha", "Note " + std::to_string(turn) + ": " + std::string(3000, 'n')});
    ASSERT_EQ(asked.exit_code, 0) << "turn " << turn << ": " << asked.output << asked.error_output;
  }
  const auto requests = server.requests();
  for (const auto& request : requests) EXPECT_LE(request.body.size(), 8000u * 4) << "a request past the window";
  EXPECT_NE(requests.back().body.find("Note 299: "), std::string::npos);
  EXPECT_LE(file_text(daemon.session_path("alpha")).size(), 8000u * 4);
  EXPECT_NE(file_text(daemon.journal_path("alpha")).find("SESSION_COMPACTED"), std::string::npos);
}

TEST(ProviderE2eTest, ADeskWhoseKeyIsMissingIsKeptStoppedWithAClearError) {
  ServeDaemon daemon({DeskSetup{.name = "alpha", .script = ""},
                      DeskSetup{.name = "beta",
                                .script = "",
                                .model = "provider = \"anthropic\"\nmodel = \"claude-test\"\n"
                                         "api_key_variable = \"DESKD_E2E_UNSET_KEY\"\n"}});
  std::string why;
  ASSERT_TRUE(daemon.start({}, &why)) << why;
  const DeskctlResult desks = daemon.deskctl({"desks"});
  EXPECT_EQ(desks.exit_code, 0);
  EXPECT_NE(desks.output.find("The API key variable DESKD_E2E_UNSET_KEY is not set in deskd's environment."),
            std::string::npos)
      << desks.output;
  const DeskctlResult sent = daemon.deskctl({"send", "beta", "hello"});
  EXPECT_EQ(sent.exit_code, 1);
  EXPECT_EQ(daemon.deskctl({"send", "alpha", "/status"}).exit_code, 0);
}

}  // namespace
}  // namespace deskd::e2e
