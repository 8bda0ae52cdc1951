// McpServer's protocol, one message at a time through handle_message(): every method, every
// JSON-RPC error code, notifications, responses, and hostile input. The serving loop over
// real descriptors is in mcp_serve_test.cpp.

#include "runner/mcp/mcp_server.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <random>

#include "base/utf8_text.h"
#include "unit/tools/fake_tools.h"

namespace deskd::tools::testing {
namespace {

namespace json = boost::json;
using ::testing::AllOf;
using ::testing::HasSubstr;

class McpServerTest : public ::testing::Test {
 protected:
  /// The reply to `message` as JSON, or null when there was none.
  json::value ask(std::string_view message) {
    std::optional<std::string> reply = run_on_loop(server_.handle_message(message));
    last_reply_ = reply.value_or("");
    if (!reply) return nullptr;
    EXPECT_EQ(reply->find('\n'), std::string::npos) << "a reply must fit on one line";
    std::error_code error;
    json::value parsed = json::parse(*reply, error);
    EXPECT_FALSE(error) << *reply;
    EXPECT_TRUE(parsed.is_object()) << *reply;
    EXPECT_EQ(parsed.at("jsonrpc"), "2.0") << *reply;
    // MCP has no null id, and its SDKs drop a message that carries one.
    if (const auto* id = parsed.as_object().if_contains("id")) {
      EXPECT_TRUE(id->is_string() || id->is_number()) << *reply;
    }
    return parsed;
  }
  json::value ask(const char* message) { return ask(std::string_view(message)); }
  json::value ask(const std::string& message) { return ask(std::string_view(message)); }
  json::value ask(const json::value& message) { return ask(std::string_view(json::serialize(message))); }

  static json::value request(json::value id, std::string_view method, json::value params = nullptr) {
    json::object message{{"jsonrpc", "2.0"}, {"id", std::move(id)}, {"method", method}};
    if (!params.is_null()) message["params"] = std::move(params);
    return message;
  }

  /// The error code of `reply`, or 0 when it is not an error.
  static std::int64_t error_code(const json::value& reply) {
    const auto* error = reply.as_object().if_contains("error");
    return error == nullptr ? 0 : error->at("code").as_int64();
  }

  /// Initializes the session with `version`; most tests start with it.
  void initialize(const char* version = "2025-11-25") {
    const json::value reply = ask(request(1, "initialize", json::object{{"protocolVersion", version}}));
    ASSERT_EQ(reply.at("result").at("protocolVersion"), version);
  }

  json::value call_tool(std::string_view name, json::value arguments) {
    return ask(request(7, "tools/call", json::object{{"name", name}, {"arguments", std::move(arguments)}}));
  }

  std::shared_ptr<FakeToolLog> log_ = std::make_shared<FakeToolLog>();
  ToolRegistry registry_ = make_fake_registry(log_);
  McpServer server_{registry_, McpServerInfo{"deskd", "9.8.7"}};
  std::string last_reply_;  // the text of the last reply, as written
};

// The usual state: a session initialized with the newest revision.
class McpSessionTest : public McpServerTest {
 protected:
  void SetUp() override { initialize(); }
};

TEST_F(McpServerTest, InitializeAnswersTheClientsVersionWhenSupported) {
  for (const char* version : {"2025-06-18", "2025-11-25"}) {
    McpServer server{registry_, McpServerInfo{"deskd", "9.8.7"}};  // one initialize a session
    const std::optional<std::string> text = run_on_loop(server.handle_message(
        json::serialize(request(1, "initialize",
                                json::object{{"protocolVersion", version},
                                             {"capabilities", json::object{}},
                                             {"clientInfo", json::object{{"name", "t"}, {"version", "1"}}}}))));
    ASSERT_TRUE(text.has_value());
    const json::value reply = json::parse(*text);
    EXPECT_EQ(reply.at("id"), 1);
    const json::value& result = reply.at("result");
    EXPECT_EQ(result.at("protocolVersion"), version);
    EXPECT_EQ(result.at("serverInfo"), (json::object{{"name", "deskd"}, {"version", "9.8.7"}}));
    EXPECT_EQ(result.at("capabilities"), (json::object{{"tools", json::object{{"listChanged", false}}}}));
  }
}

TEST_F(McpServerTest, InitializeAnswersTheNewestVersionForAnOlderOrNewerRevision) {
  // The spec: a version the server lacks is answered with one it speaks, and the client
  // decides (the TypeScript SDK then says "Server's protocol version is not supported").
  // A modern revision too: initialize is the legacy handshake, which has none.
  for (const char* version : {"2024-11-05", "2025-03-26", "2026-07-28", "2099-01-01"}) {
    McpServer server{registry_, McpServerInfo{}};
    const std::optional<std::string> reply = run_on_loop(
        server.handle_message(json::serialize(request("a", "initialize", json::object{{"protocolVersion", version}}))));
    ASSERT_TRUE(reply.has_value());
    EXPECT_EQ(json::parse(*reply).at("result").at("protocolVersion"), "2025-11-25") << version;
  }
}

TEST_F(McpServerTest, AVersionThatIsNoRevisionIsRefusedListingTheVersionsSpoken) {
  for (const json::value& version : {json::value(""), json::value("1.0.0"), json::value(20250618)}) {
    const json::value reply = ask(request(1, "initialize", json::object{{"protocolVersion", version}}));
    EXPECT_EQ(error_code(reply), -32602) << json::serialize(version);
    EXPECT_THAT(std::string(reply.at("error").at("message").as_string()), HasSubstr("Unsupported protocol version"));
    EXPECT_EQ(reply.at("error").at("data").at("supported"), (json::array{"2026-07-28", "2025-11-25", "2025-06-18"}));
    EXPECT_EQ(reply.at("error").at("data").at("requested"), version);
  }
  EXPECT_EQ(error_code(ask(request(1, "initialize"))), -32602);
  initialize();  // a refused initialize leaves the session open to a good one
}

TEST_F(McpServerTest, RequestsBeforeInitializeAreRefusedButPing) {
  EXPECT_EQ(error_code(ask(request(1, "tools/list"))), -32600);
  EXPECT_THAT(std::string(last_reply_), HasSubstr("send initialize first"));
  EXPECT_EQ(error_code(call_tool("echo", json::object{{"text", "early"}})), -32600);
  EXPECT_EQ(log_->calls, 0);
  EXPECT_EQ(ask(request(2, "ping")).at("result"), json::object{});
  initialize();
  EXPECT_EQ(error_code(ask(request(3, "tools/list"))), 0);
}

TEST_F(McpSessionTest, ASecondInitializeIsRefused) {
  const json::value reply = ask(request(2, "initialize", json::object{{"protocolVersion", "2025-06-18"}}));
  EXPECT_EQ(error_code(reply), -32600);
  EXPECT_THAT(std::string(reply.at("error").at("message").as_string()), HasSubstr("already initialized"));
}

TEST_F(McpServerTest, InitializedNotificationGetsNoReply) {
  EXPECT_TRUE(ask(R"({"jsonrpc":"2.0","method":"notifications/initialized"})").is_null());
  EXPECT_TRUE(ask(R"({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":3}})").is_null());
}

TEST_F(McpServerTest, ServerDiscoverListsVersionsCapabilitiesAndIdentity) {
  const json::value reply = ask(request(2, "server/discover", json::object{{"_meta", json::object{}}}));
  const json::value& result = reply.at("result");
  EXPECT_EQ(result.at("resultType"), "complete");
  EXPECT_EQ(result.at("supportedVersions"), (json::array{"2026-07-28", "2025-11-25", "2025-06-18"}));
  EXPECT_EQ(result.at("capabilities").at("tools").at("listChanged"), false);
  EXPECT_EQ(result.at("ttlMs"), 3600000);
  EXPECT_EQ(result.at("cacheScope"), "private");
  EXPECT_EQ(result.at("serverInfo").at("name"), "deskd");
  EXPECT_EQ(result.at("_meta").at("io.modelcontextprotocol/serverInfo").at("version"), "9.8.7");
}

TEST_F(McpServerTest, PingAnswersAnEmptyResult) {
  const json::value reply = ask(request(3, "ping"));
  EXPECT_EQ(reply.at("id"), 3);
  EXPECT_EQ(reply.at("result"), json::object{});
}

TEST_F(McpSessionTest, ToolsListGivesNameTitleDescriptionSchemasAndAnnotations) {
  const json::value reply = ask(request(4, "tools/list"));
  const json::array& tools = reply.at("result").at("tools").as_array();
  ASSERT_EQ(tools.size(), 4u);
  EXPECT_EQ(tools[0].at("name"), "echo");
  EXPECT_EQ(tools[0].at("title"), "echo") << "a tool without a title is shown by its name";
  EXPECT_EQ(tools[0].at("description"), "Answers with the text it was given.");
  EXPECT_EQ(tools[0].at("inputSchema").at("required"), json::array{"text"});
  EXPECT_EQ(tools[0].at("outputSchema").at("required"), (json::array{"text", "truncated", "is_error"}));
  // The spec's defaults, the cautious ones, for a tool that says nothing of its effects; the
  // title again, for hosts that read only annotations.title.
  EXPECT_EQ(tools[0].at("annotations"), (json::object{{"title", "echo"},
                                                      {"readOnlyHint", false},
                                                      {"destructiveHint", true},
                                                      {"idempotentHint", false},
                                                      {"openWorldHint", true}}));
  // A tool whose schema is not JSON still lists, with the loosest object schema.
  EXPECT_EQ(tools[3].at("name"), "broken_schema");
  EXPECT_EQ(tools[3].at("inputSchema"), (json::object{{"type", "object"}}));
}

TEST_F(McpSessionTest, ToolsListRefusesACursorItNeverGave) {
  EXPECT_EQ(error_code(ask(request(4, "tools/list", json::object{{"cursor", "abc"}}))), -32602);
  EXPECT_EQ(error_code(ask(request(4, "tools/list", json::object{{"cursor", nullptr}}))), 0);
}

TEST_F(McpSessionTest, ToolsCallAnswersTextAndStructuredContent) {
  const json::value reply = call_tool("echo", json::object{{"text", "hi there"}});
  EXPECT_EQ(reply.at("id"), 7);
  EXPECT_EQ(
      reply.at("result"),
      (json::object{{"content", json::array{json::object{{"type", "text"}, {"text", "hi there"}}}},
                    {"structuredContent",
                     json::object{{"text", "hi there"}, {"truncated", false}, {"is_error", false}, {"exit_status", 0}}},
                    {"isError", false}}));
}

// 2025-06-18 lists "invalid arguments" among protocol errors; from 2025-11-25 on they are
// the tool's error (mcp_revisions_test.cpp).
TEST_F(McpServerTest, ArgumentsAreCheckedAgainstTheInputSchemaUnder20250618) {
  initialize("2025-06-18");
  struct Case {
    json::value arguments;
    const char* named;
  };
  const Case cases[] = {{json::object{}, "'text' is required."},
                        {nullptr, "'text' is required."},
                        {json::object{{"text", 5}}, "'text' must be a string."},
                        {json::object{{"text", "x"}, {"other", 1}}, "'other' is not an argument of this tool"}};
  for (const Case& each : cases) {
    json::object params{{"name", "echo"}};
    if (!each.arguments.is_null()) params["arguments"] = each.arguments;
    const json::value reply = ask(request(8, "tools/call", params));
    EXPECT_EQ(error_code(reply), -32602) << json::serialize(each.arguments);
    EXPECT_THAT(std::string(reply.at("error").at("message").as_string()),
                AllOf(HasSubstr("Invalid arguments for tool echo"), HasSubstr(each.named)));
  }
  EXPECT_EQ(log_->calls, 0) << "a call refused by its schema must not run";
}

TEST_F(McpSessionTest, AFailedToolIsAnErrorResultNotAProtocolError) {
  const json::value thrown = call_tool("throws", json::object{});
  EXPECT_EQ(error_code(thrown), 0);
  EXPECT_EQ(thrown.at("result").at("isError"), true);
  EXPECT_EQ(thrown.at("result").at("content").at(0).at("text"), "throws failed: the fake tool broke");
}

TEST_F(McpSessionTest, AnUnknownToolIsInvalidParamsListingTheTools) {
  const json::value reply = call_tool("nope", json::object{});
  EXPECT_EQ(error_code(reply), -32602);
  EXPECT_EQ(reply.at("id"), 7);
  EXPECT_EQ(reply.at("error").at("message"), "Unknown tool: nope. The tools are: echo, slow, throws, broken_schema.");
}

TEST_F(McpSessionTest, InvalidBytesInToolOutputBecomeReplacementCharacters) {
  const json::value reply = call_tool("broken_schema", json::object{});
  const std::string text(reply.at("result").at("content").at(0).at("text").as_string());
  EXPECT_EQ(text, "bytes \xEF\xBF\xBD\xEF\xBF\xBD here");
}

TEST_F(McpSessionTest, ToolsCallWithBadParamsIsInvalidParams) {
  EXPECT_EQ(error_code(ask(request(9, "tools/call"))), -32602);
  EXPECT_EQ(error_code(ask(request(9, "tools/call", json::object{{"name", 3}}))), -32602);
  EXPECT_EQ(error_code(ask(request(9, "tools/call", json::object{{"name", "echo"}, {"arguments", "text"}}))), -32602);
  EXPECT_EQ(error_code(ask(request(9, "tools/call", json::array{"echo"}))), -32602);
  EXPECT_EQ(log_->calls, 0);
}

TEST_F(McpSessionTest, AnUnknownMethodIsMethodNotFound) {
  const json::value reply = ask(request(10, "resources/list"));
  EXPECT_EQ(reply.at("id"), 10);
  EXPECT_EQ(error_code(reply), -32601);
  EXPECT_THAT(std::string(reply.at("error").at("message").as_string()), HasSubstr("resources/list"));
  // A huge method name is not echoed whole.
  const json::value huge = ask(request(11, std::string(50000, 'm')));
  EXPECT_EQ(error_code(huge), -32601);
  EXPECT_LT(huge.at("error").at("message").as_string().size(), 300u);
}

// Without an id there is nobody to answer before a session speaks 2025-11-25: JSON-RPC's
// null id is not MCP's, and its SDKs drop such a line. The error goes to stderr.
TEST_F(McpServerTest, UnparseableInputBeforeInitializeGetsNoReply) {
  for (const char* text : {"garbage", "{", "\"unterminated", "{\"a\":1}}", "\xff\xfe", "[]", "42", "null"}) {
    EXPECT_TRUE(ask(std::string_view(text)).is_null()) << text;
  }
}

TEST_F(McpServerTest, UnparseableInputUnder20250618GetsNoReply) {
  initialize("2025-06-18");  // its schema has no error without an id
  EXPECT_TRUE(ask("garbage").is_null());
  EXPECT_TRUE(ask(R"({"jsonrpc":"2.0","id":null,"method":"ping"})").is_null());
}

TEST_F(McpSessionTest, UnparseableInputUnder20251125IsAnsweredWithoutAnId) {
  for (const char* text : {"garbage", "{", "\"unterminated", "{\"a\":1}}", "\xff\xfe"}) {
    const json::value reply = ask(std::string_view(text));
    ASSERT_TRUE(reply.is_object()) << text;
    EXPECT_EQ(error_code(reply), -32700) << text;
    EXPECT_FALSE(reply.as_object().contains("id")) << text;
  }
}

TEST_F(McpSessionTest, AParseErrorWithAnIdIsAnsweredWithIt) {
  const json::value reply = ask(R"({"jsonrpc":"2.0","id":41,"method":"ping")");
  EXPECT_EQ(error_code(reply), -32700);
  EXPECT_EQ(reply.at("id"), 41);
}

TEST_F(McpSessionTest, BytesThatAreNotUtf8AreReplacedNotRefused) {
  const json::value reply = ask("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"p\xffing\"}");
  EXPECT_EQ(error_code(reply), -32601) << "the message was read, with U+FFFD for the byte";
  EXPECT_EQ(reply.at("id"), 1);
}

TEST_F(McpSessionTest, ALoneSurrogateInAnArgumentIsReplacedAndTheCallRuns) {
  const json::value reply = ask(
      R"({"jsonrpc":"2.0","id":12,"method":"tools/call","params":{"name":"echo","arguments":{"text":"cut \ud83d"}}})");
  EXPECT_EQ(reply.at("id"), 12);
  EXPECT_EQ(reply.at("result").at("content").at(0).at("text"), "cut \xEF\xBF\xBD");
}

TEST_F(McpSessionTest, DeepNestingIsRefusedNamingTheLimitAndAnsweredWithTheId) {
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  const json::value reply = ask(
      R"({"jsonrpc":"2.0","id":"d","method":"tools/call","params":{"name":"echo","arguments":{"text":)" + deep + "}}}");
  EXPECT_EQ(error_code(reply), -32700);
  EXPECT_EQ(reply.at("id"), "d");
  EXPECT_THAT(std::string(reply.at("error").at("message").as_string()), HasSubstr("at most 64"));
  EXPECT_EQ(log_->calls, 0);
  // Without an id it is still refused, without one.
  EXPECT_FALSE(ask(deep).as_object().contains("id"));
}

TEST_F(McpSessionTest, BatchesAreInvalidRequests) {
  const std::string batch = "[" + json::serialize(request(1, "ping")) + "," + json::serialize(request(2, "ping")) + "]";
  const json::value reply = ask(batch);
  EXPECT_EQ(error_code(reply), -32600);
  EXPECT_FALSE(reply.as_object().contains("id"));
  EXPECT_EQ(error_code(ask("[]")), -32600);
}

TEST_F(McpSessionTest, MessagesThatAreNotRequestsAreInvalidRequests) {
  struct Case {
    const char* message;
    json::value id;  // the id the error carries; null: none
  };
  const Case cases[] = {
      {"42", nullptr},
      {"\"ping\"", nullptr},
      {"null", nullptr},
      {"{}", nullptr},
      {R"({"jsonrpc":"2.0"})", nullptr},
      {R"({"jsonrpc":"2.0","id":5})", 5},
      {R"({"id":1,"method":"ping"})", 1},
      {R"({"jsonrpc":"1.0","id":1,"method":"ping"})", 1},
      {R"({"jsonrpc":2.0,"id":1,"method":"ping"})", 1},
      {R"({"jsonrpc":"2.0","id":1,"method":7})", 1},
      {R"({"jsonrpc":"2.0","id":{"a":1},"method":"ping"})", nullptr},
      {R"({"jsonrpc":"2.0","id":[1],"method":"ping"})", nullptr},
      {R"({"jsonrpc":"2.0","id":true,"method":"ping"})", nullptr},
      {R"({"jsonrpc":"2.0","id":null,"method":"ping"})", nullptr},
      {R"({"jsonrpc":"2.0","id":1,"method":"ping","params":"bar"})", 1},
      {R"({"jsonrpc":"2.0","method":1,"params":"bar"})", nullptr},
  };
  for (const Case& each : cases) {
    const json::value reply = ask(std::string_view(each.message));
    ASSERT_TRUE(reply.is_object()) << each.message;
    EXPECT_EQ(error_code(reply), -32600) << each.message;
    if (each.id.is_null()) {
      EXPECT_FALSE(reply.as_object().contains("id")) << each.message;
    } else {
      EXPECT_EQ(reply.at("id"), each.id) << each.message;
    }
  }
}

TEST_F(McpSessionTest, NotificationsNeverGetReplies) {
  for (const char* message :
       {R"({"jsonrpc":"2.0","method":"ping"})", R"({"jsonrpc":"2.0","method":"no/such/method"})",
        R"({"jsonrpc":"2.0","method":"tools/call","params":{"name":"echo","arguments":{"text":"x"}}})",
        R"({"jsonrpc":"2.0","method":"tools/call","params":[1,2]})", R"({"jsonrpc":"2.0","method":"initialize"})"}) {
    EXPECT_TRUE(ask(std::string_view(message)).is_null()) << message;
  }
  EXPECT_EQ(log_->calls, 0) << "a notification must not run a tool";
}

TEST_F(McpSessionTest, ResponsesFromTheClientGetNoReply) {
  EXPECT_TRUE(ask(R"({"jsonrpc":"2.0","id":1,"result":{}})").is_null());
  EXPECT_TRUE(ask(R"({"jsonrpc":"2.0","id":1,"error":{"code":-1,"message":"no"}})").is_null());
}

TEST_F(McpServerTest, IdsComeBackExactly) {
  for (json::value id : {json::value("req-1"), json::value(0), json::value(-5), json::value(1.5),
                         json::value(std::uint64_t{18446744073709551615u}), json::value("")}) {
    EXPECT_EQ(ask(request(id, "ping")).at("id"), id);
  }
}

// Byte for byte: a number is not rewritten by a round trip through a double (1.5 -> 1.5E0).
TEST_F(McpSessionTest, IdsComeBackAsTheExactTextSent) {
  for (const char* id : {"1.5", "1180591620717411303424", "-0", "1e3", "1.50", "\"x\\u0041\"", "7"}) {
    ask(std::string(R"({"jsonrpc":"2.0","id":)") + id + R"(,"method":"ping"})");
    EXPECT_EQ(last_reply_, std::string(R"({"jsonrpc":"2.0","id":)") + id + R"(,"result":{}})");
    ask(std::string(R"({"jsonrpc":"2.0","id":)") + id + R"(,"method":"nope"})");
    EXPECT_THAT(last_reply_, HasSubstr(std::string(R"("id":)") + id + ","));
  }
}

TEST_F(McpSessionTest, ExtraFieldsAndMetaAreIgnored) {
  const json::value reply = ask(R"({"jsonrpc":"2.0","id":1,"method":"tools/call","extra":true,
    "params":{"name":"echo","arguments":{"text":"x"},"_meta":{"progressToken":"p"},"other":1}})");
  EXPECT_EQ(reply.at("result").at("content").at(0).at("text"), "x");
}

// Mutations of valid messages and random bytes: every reply is a well-formed JSON-RPC
// message (checked in ask()), and nothing throws or crashes.
TEST_F(McpSessionTest, FuzzedMessagesNeverCrashAndAlwaysAnswerWellFormed) {
  const std::vector<std::string> seeds = {
      json::serialize(request(1, "initialize", json::object{{"protocolVersion", "2025-06-18"}})),
      json::serialize(request(2, "tools/list")),
      json::serialize(
          request(3, "tools/call", json::object{{"name", "echo"}, {"arguments", json::object{{"text", "a"}}}})),
      json::serialize(request("x", "server/discover")),
      R"({"jsonrpc":"2.0","method":"notifications/initialized"})",
  };
  std::mt19937 random(12345);
  const std::string alphabet = "{}[]\":,0123456789.-eE truefalsnul\\/\x01\xc3\xa9\xff";
  for (int round = 0; round < 3000; ++round) {
    std::string message = seeds[random() % seeds.size()];
    const int mutations = 1 + static_cast<int>(random() % 4);
    for (int step = 0; step < mutations && !message.empty(); ++step) {
      const std::size_t at = random() % message.size();
      switch (random() % 3) {
        case 0: message.erase(at, 1 + random() % 3); break;
        case 1: message.insert(at, 1, alphabet[random() % alphabet.size()]); break;
        default: message[at] = alphabet[random() % alphabet.size()]; break;
      }
    }
    if (round % 10 == 0) {
      message.clear();
      for (int length = static_cast<int>(random() % 64); length > 0; --length) message += static_cast<char>(random());
    }
    (void)ask(message);
  }
  SUCCEED();
}

}  // namespace
}  // namespace deskd::tools::testing
