// deskd serve with `provider = "openai"` and `api = "responses"` against a fake Responses
// API on loopback, driven by deskctl ask: a reasoning model's bash call run in the sandbox,
// its output sent back as a function_call_output with the call's call_id and the reasoning
// item with its encrypted content (store = false); a refusal billed in /usage and taken out
// of the session, so the next message goes alone. The streams are the Responses API's
// event shapes of tests/unit/model/responses_recorded_streams.h (openai-python's OpenAPI
// spec examples and response types, cited there).

#include <gtest/gtest.h>

#include <boost/json.hpp>

#include "e2e/daemon_fixture.h"
#include "unit/model/fake_http_server.h"
#include "unit/model/responses_recorded_streams.h"

namespace deskd::e2e {
namespace {

namespace json = boost::json;
using model::testing::FakeHttpServer;
using model::testing::FakeResponse;

constexpr const char* kResponsesKey = "sk-e2e-responses-5eed";

std::string responses_event(const json::object& data) {
  return "event: " + std::string(data.at("type").as_string()) + "\ndata: " + json::serialize(data) + "\n\n";
}

json::object final_response(std::string_view status, int input, int output) {
  return {{"type", "response.completed"},
          {"response",
           {{"id", "resp_e2e"},
            {"object", "response"},
            {"status", status},
            {"model", "gpt-5-codex"},
            {"output", json::array{}},
            {"usage",
             {{"input_tokens", input},
              {"input_tokens_details", {{"cached_tokens", 0}}},
              {"output_tokens", output},
              {"output_tokens_details", {{"reasoning_tokens", 0}}},
              {"total_tokens", input + output}}}}}};
}

// Reasoning (done with its encrypted content), then a bash call streamed in two pieces.
FakeResponse reasoning_then_bash() {
  const std::string arguments = R"({"command": "echo ran-in-the-sandbox"})";
  json::object reasoning{{"id", "rs_e2e"},
                         {"type", "reasoning"},
                         {"encrypted_content", "gAAAAE2E-ENCRYPTED"},
                         {"summary", json::array{{{"type", "summary_text"}, {"text", "Run it."}}}}};
  json::object call{{"id", "fc_e2e"}, {"type", "function_call"}, {"status", "completed"},
                    {"name", "bash"}, {"call_id", "call_e2e_1"}, {"arguments", arguments}};
  json::object added_call = call;
  added_call["arguments"] = "";
  added_call["status"] = "in_progress";
  return FakeResponse::event_stream(
      {{responses_event({{"type", "response.created"},
                         {"response", {{"id", "resp_e2e"}, {"status", "in_progress"}, {"model", "gpt-5-codex"}}}})},
       {responses_event({{"type", "response.output_item.added"},
                         {"output_index", 0},
                         {"item", {{"id", "rs_e2e"}, {"type", "reasoning"}, {"summary", json::array{}}}}})},
       {responses_event({{"type", "response.output_item.done"}, {"output_index", 0}, {"item", reasoning}})},
       {responses_event({{"type", "response.output_item.added"}, {"output_index", 1}, {"item", added_call}})},
       {responses_event({{"type", "response.function_call_arguments.delta"},
                         {"item_id", "fc_e2e"},
                         {"output_index", 1},
                         {"delta", arguments.substr(0, 12)}}),
        std::chrono::milliseconds(20)},
       {responses_event({{"type", "response.function_call_arguments.delta"},
                         {"item_id", "fc_e2e"},
                         {"output_index", 1},
                         {"delta", arguments.substr(12)}})},
       {responses_event({{"type", "response.output_item.done"}, {"output_index", 1}, {"item", call}})},
       {responses_event(final_response("completed", 1000, 50))}});
}

// What the request with `index` sent as input.
json::array input_of(const FakeHttpServer& server, std::size_t index) {
  return json::parse(server.requests().at(index).body).at("input").as_array();
}

TEST(ResponsesE2eTest, ADeskRunsAToolCallThroughTheResponsesApi) {
  FakeHttpServer server;
  server.enqueue(reasoning_then_bash());
  server.enqueue(
      FakeResponse::event_stream({{model::testing::responses_text_stream("The sandbox ran it.", "gpt-5-codex")}}));
  server.enqueue(FakeResponse::event_stream({{std::string(model::testing::kResponsesRefusalStream)}}));
  server.enqueue(FakeResponse::event_stream({{model::testing::responses_text_stream("Fresh start.", "gpt-5-codex")}}));
  ServeDaemon daemon(
      {DeskSetup{.name = "alpha",
                 .script = "",
                 .tables = "[desk.model.prices.\"gpt-5-codex\"]\ninput = 1.25\noutput = 10.0\n"
                           "[desk.model.prices.\"gpt-5.4\"]\ninput = 1.25\noutput = 10.0\n",
                 .model = "provider = \"openai\"\napi = \"responses\"\nmodel = \"gpt-5-codex\"\nbase_url = \"" +
                          server.url("/v1") + "\"\napi_key_variable = \"DESKD_E2E_KEY\"\nmax_retries = 0\n"}});
  std::string why;
  ASSERT_TRUE(daemon.start({std::string("DESKD_E2E_KEY=") + kResponsesKey}, &why)) << why;

  const DeskctlResult asked = daemon.deskctl({"ask", "alpha", "Run the echo."});
  EXPECT_EQ(asked.exit_code, 0) << asked.output << asked.error_output;
  EXPECT_NE(asked.output.find("ran-in-the-sandbox"), std::string::npos) << asked.output;
  EXPECT_NE(asked.output.find("The sandbox ran it."), std::string::npos) << asked.output;

  ASSERT_GE(server.requests().size(), 2u);
  EXPECT_EQ(server.requests()[0].target, "/v1/responses");
  EXPECT_EQ(server.requests()[0].header("authorization"), std::string("Bearer ") + kResponsesKey);
  const json::object first = json::parse(server.requests()[0].body).as_object();
  EXPECT_EQ(first.at("store"), false);
  EXPECT_EQ(first.at("include"), (json::array{"reasoning.encrypted_content"}));
  // The second request: the reasoning item (no id), the call, and its output by call_id.
  bool reasoning_sent = false;
  bool call_sent = false;
  bool output_sent = false;
  for (const json::value& item : input_of(server, 1)) {
    const json::object& fields = item.as_object();
    const json::value* type = fields.if_contains("type");
    if (type == nullptr) continue;
    if (*type == "reasoning") {
      reasoning_sent = fields.at("encrypted_content") == "gAAAAE2E-ENCRYPTED" && !fields.contains("id");
    } else if (*type == "function_call") {
      call_sent = fields.at("call_id") == "call_e2e_1" && fields.at("name") == "bash";
    } else if (*type == "function_call_output") {
      output_sent = fields.at("call_id") == "call_e2e_1" &&
                    std::string(fields.at("output").as_string()).find("ran-in-the-sandbox") != std::string::npos;
    }
  }
  EXPECT_TRUE(reasoning_sent) << server.requests()[1].body;
  EXPECT_TRUE(call_sent) << server.requests()[1].body;
  EXPECT_TRUE(output_sent) << server.requests()[1].body;

  // A refusal: the turn fails with the model's words, its usage is counted, and the next
  // message goes without it.
  const DeskctlResult refused = daemon.deskctl({"ask", "alpha", "Something refused."});
  EXPECT_EQ(refused.exit_code, 1);
  EXPECT_NE(refused.output.find("I'm sorry, but I can't assist with that request."), std::string::npos)
      << refused.output;
  const DeskctlResult next = daemon.deskctl({"ask", "alpha", "Start again."});
  EXPECT_EQ(next.exit_code, 0) << next.output << next.error_output;
  ASSERT_EQ(server.requests().size(), 4u);
  const std::string fourth = server.requests()[3].body;
  EXPECT_EQ(fourth.find("Something refused."), std::string::npos) << fourth;
  EXPECT_NE(fourth.find("Start again."), std::string::npos) << fourth;

  const DeskctlResult usage = daemon.deskctl({"ask", "alpha", "/usage"});
  EXPECT_EQ(usage.exit_code, 0);
  EXPECT_NE(usage.output.find("gpt-5.4"), std::string::npos) << "the refusal's model is counted: " << usage.output;
  EXPECT_EQ(daemon.stop(), 0);
  EXPECT_EQ(daemon.process().error_output().find(kResponsesKey), std::string::npos);
}

}  // namespace
}  // namespace deskd::e2e
