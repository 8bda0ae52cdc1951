// What differs between the revisions McpServer speaks: input validation errors as tool
// results from 2025-11-25 on (SEP-1303; -32602 under 2025-06-18, an unknown tool -32602 in
// every one), and the 2026-07-28 era without a handshake (docs/specification/2026-07-28 of
// modelcontextprotocol/modelcontextprotocol: basic/versioning.mdx, server/discover.mdx,
// basic/index.mdx): the revision named in each request's _meta, -32022 for one not spoken,
// resultType and serverInfo on every result, ttlMs and cacheScope on tools/list. The replies'
// shapes are checked against the revisions' schema.json by tests/e2e/mcp_client.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "runner/mcp/mcp_server.h"
#include "unit/tools/fake_tools.h"

namespace deskd::tools::testing {
namespace {

namespace json = boost::json;
using ::testing::HasSubstr;

constexpr const char* kModern = "2026-07-28";

class McpRevisionTest : public ::testing::Test {
 protected:
  json::value send(const json::value& message) {
    std::optional<std::string> reply = run_on_loop(server_.handle_message(json::serialize(message)));
    if (!reply) return nullptr;
    return json::parse(*reply);
  }

  static json::object meta(std::string_view version) {
    return json::object{{"io.modelcontextprotocol/protocolVersion", version},
                        {"io.modelcontextprotocol/clientInfo", json::object{{"name", "t"}, {"version", "1"}}},
                        {"io.modelcontextprotocol/clientCapabilities", json::object{}}};
  }
  static json::value message(json::value id, std::string_view method, json::object params) {
    return json::object{{"jsonrpc", "2.0"}, {"id", std::move(id)}, {"method", method}, {"params", std::move(params)}};
  }
  /// A request of the modern era: its revision in its _meta.
  static json::value modern(json::value id, std::string_view method, json::object params = {},
                            std::string_view version = kModern) {
    params["_meta"] = meta(version);
    return message(std::move(id), method, std::move(params));
  }
  static std::int64_t code_of(const json::value& reply) {
    const auto* error = reply.as_object().if_contains("error");
    return error == nullptr ? 0 : error->at("code").as_int64();
  }
  void start_session(const char* version) {
    ASSERT_EQ(code_of(send(message(1, "initialize", json::object{{"protocolVersion", version}}))), 0);
  }

  std::shared_ptr<FakeToolLog> log_ = std::make_shared<FakeToolLog>();
  ToolRegistry registry_ = make_fake_registry(log_);
  McpServer server_{registry_, McpServerInfo{"deskd", "9.8.7"}};
};

// SEP-1303: the model reads deskd's sentence and can correct the call.
TEST_F(McpRevisionTest, BadArgumentsAreAToolErrorFrom20251125On) {
  start_session("2025-11-25");
  const json::value reply =
      send(message(8, "tools/call", json::object{{"name", "echo"}, {"arguments", json::object{{"text", 5}}}}));
  ASSERT_EQ(code_of(reply), 0) << json::serialize(reply);
  const json::value& result = reply.at("result");
  const std::string said = "Invalid arguments for tool echo: 'text' must be a string.";
  EXPECT_EQ(result.at("isError"), true);
  EXPECT_EQ(result.at("content"), (json::array{json::object{{"type", "text"}, {"text", said}}}));
  // A host that shows the model structuredContent instead tells it the same, error and all.
  EXPECT_EQ(result.at("structuredContent"), (json::object{{"text", said}, {"truncated", false}, {"is_error", true}}));
  EXPECT_EQ(log_->calls, 0) << "a call refused by its schema must not run";
}

TEST_F(McpRevisionTest, AMissingArgumentIsAToolErrorToo) {
  start_session("2025-11-25");
  const json::value reply = send(message(8, "tools/call", json::object{{"name", "echo"}}));
  EXPECT_EQ(reply.at("result").at("isError"), true);
  EXPECT_THAT(std::string(reply.at("result").at("content").at(0).at("text").as_string()),
              HasSubstr("'text' is required"));
}

TEST_F(McpRevisionTest, WhatBreaksCallToolRequestItselfStaysAProtocolError) {
  start_session("2025-11-25");
  EXPECT_EQ(code_of(send(message(8, "tools/call", json::object{{"name", "nope"}}))), -32602) << "an unknown tool";
  EXPECT_EQ(code_of(send(message(8, "tools/call", json::object{{"name", "echo"}, {"arguments", "x"}}))), -32602);
  EXPECT_EQ(code_of(send(message(8, "tools/call", json::object{{"name", 3}}))), -32602);
}

TEST_F(McpRevisionTest, ModernRequestsNeedNoInitialize) {
  const json::value listed = send(modern(2, "tools/list"));
  ASSERT_EQ(code_of(listed), 0) << json::serialize(listed);
  const json::object& result = listed.at("result").as_object();
  EXPECT_EQ(result.at("resultType"), "complete");
  EXPECT_EQ(result.at("tools").as_array().size(), 4u);
  EXPECT_EQ(result.at("ttlMs"), 3600000);
  EXPECT_EQ(result.at("cacheScope"), "private");
  EXPECT_EQ(result.at("_meta").at("io.modelcontextprotocol/serverInfo"),
            (json::object{{"name", "deskd"}, {"version", "9.8.7"}}));

  const json::value called =
      send(modern(3, "tools/call", json::object{{"name", "echo"}, {"arguments", {{"text", "hi"}}}}));
  EXPECT_EQ(called.at("result").at("resultType"), "complete");
  EXPECT_EQ(called.at("result").at("content").at(0).at("text"), "hi");
  EXPECT_EQ(called.at("result").at("isError"), false);
  EXPECT_TRUE(called.at("result").at("_meta").as_object().contains("io.modelcontextprotocol/serverInfo"));

  const json::value refused = send(modern(4, "tools/call", json::object{{"name", "echo"}, {"arguments", {{"x", 1}}}}));
  EXPECT_EQ(refused.at("result").at("isError"), true);
  EXPECT_EQ(refused.at("result").at("resultType"), "complete");
}

TEST_F(McpRevisionTest, ServerDiscoverUnderTheModernRevision) {
  const json::value reply = send(modern("discover-1", "server/discover"));
  const json::object& result = reply.at("result").as_object();
  EXPECT_EQ(result.at("supportedVersions"), (json::array{kModern, "2025-11-25", "2025-06-18"}));
  EXPECT_EQ(result.at("resultType"), "complete");
  EXPECT_EQ(result.at("_meta").at("io.modelcontextprotocol/serverInfo").at("name"), "deskd");
}

// The spec: "If the server does not implement the requested version ... it MUST respond
// with an UnsupportedProtocolVersionError listing the versions it does support". A client
// that probed with server/discover then retries with one of them.
TEST_F(McpRevisionTest, AModernRevisionNotSpokenIsRefusedWith32022) {
  for (const char* version : {"2027-01-01", "banana", ""}) {
    for (const char* method : {"server/discover", "tools/list"}) {
      const json::value reply = send(modern(5, method, {}, version));
      EXPECT_EQ(code_of(reply), -32022) << version << " " << method;
      EXPECT_EQ(reply.at("id"), 5);
      EXPECT_EQ(
          reply.at("error").at("data"),
          (json::object{{"supported", json::array{kModern, "2025-11-25", "2025-06-18"}}, {"requested", version}}));
      EXPECT_THAT(std::string(reply.at("error").at("message").as_string()), HasSubstr("Unsupported protocol version"));
    }
  }
  json::object odd{{"_meta", json::object{{"io.modelcontextprotocol/protocolVersion", 20260728}}}};
  EXPECT_EQ(code_of(send(message(6, "tools/list", odd))), -32602);
}

TEST_F(McpRevisionTest, TheModernRevisionHasNoPing) {
  EXPECT_EQ(code_of(send(modern(7, "ping"))), -32601);
  EXPECT_EQ(code_of(send(modern(7, "resources/list"))), -32601);
}

// A legacy revision in _meta (some legacy clients send it) leaves the request to the
// session: before initialize it is refused as any legacy request is.
TEST_F(McpRevisionTest, ALegacyRevisionInMetaIsServedByTheSession) {
  const json::value early = send(modern(8, "tools/list", {}, "2025-06-18"));
  EXPECT_EQ(code_of(early), -32600);
  EXPECT_THAT(std::string(early.at("error").at("message").as_string()), HasSubstr("send initialize first"));
  start_session("2025-06-18");
  const json::value listed = send(modern(9, "tools/list", {}, "2025-11-25"));
  EXPECT_EQ(code_of(listed), 0);
  EXPECT_FALSE(listed.at("result").as_object().contains("resultType")) << "a legacy result";
  // The session's revision governs the call: 2025-06-18 keeps -32602 for bad arguments.
  EXPECT_EQ(code_of(send(modern(10, "tools/call", {{"name", "echo"}}, "2025-11-25"))), -32602);
}

// One stdio may carry both eras (the spec's "dual-era" server MAY serve them concurrently).
TEST_F(McpRevisionTest, ASessionAndModernRequestsShareOneServer) {
  start_session("2025-06-18");
  EXPECT_EQ(send(modern(2, "tools/list")).at("result").at("resultType"), "complete");
  const json::value legacy = send(message(3, "tools/list", {}));
  EXPECT_FALSE(legacy.at("result").as_object().contains("resultType"));
  // initialize is the legacy handshake even with a modern _meta.
  json::object params{{"protocolVersion", kModern}, {"_meta", meta(kModern)}};
  EXPECT_EQ(code_of(send(message(4, "initialize", params))), -32600) << "already initialized";
}

// 2026-07-28 lets an error leave out an id it could not read; a client that spoke it once
// hears why its unreadable line was refused.
TEST_F(McpRevisionTest, AfterAModernRequestUnreadableLinesAreAnsweredWithoutAnId) {
  EXPECT_FALSE(run_on_loop(server_.handle_message("garbage")).has_value());
  send(modern(1, "server/discover"));
  const std::optional<std::string> reply = run_on_loop(server_.handle_message("garbage"));
  ASSERT_TRUE(reply.has_value());
  const json::value parsed = json::parse(*reply);
  EXPECT_EQ(code_of(parsed), -32700);
  EXPECT_FALSE(parsed.as_object().contains("id"));
}

}  // namespace
}  // namespace deskd::tools::testing
