// read_mcp_message(): ids kept as the exact text sent, lone surrogates and bytes that are
// not UTF-8 repaired, nesting refused past the limit with the id still found.

#include "runner/mcp/mcp_message.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <boost/json.hpp>

namespace deskd::tools::testing {
namespace {

namespace json = boost::json;
using ::testing::HasSubstr;

constexpr char kReplacement[] = "\xEF\xBF\xBD";  // U+FFFD in UTF-8

TEST(McpMessageTest, IdsAreKeptAsTheExactTextSent) {
  for (const char* id : {"1.5", "1180591620717411303424", "-0", "1e3", "0", "-7", "\"req-1\"", "\"a\\u0041\"", "\"\""}) {
    const McpMessage message = read_mcp_message(std::string(R"({"jsonrpc":"2.0","id":)") + id + R"(,"method":"ping"})");
    EXPECT_TRUE(message.error.empty()) << id << ": " << message.error;
    ASSERT_TRUE(message.raw_id.has_value()) << id;
    EXPECT_EQ(*message.raw_id, id);
  }
}

TEST(McpMessageTest, OnlyStringAndNumberIdsHaveRawText) {
  for (const char* id : {"null", "true", "{\"a\":1}", "[1]"}) {
    const McpMessage message = read_mcp_message(std::string(R"({"jsonrpc":"2.0","id":)") + id + R"(,"method":"ping"})");
    EXPECT_FALSE(message.raw_id.has_value()) << id;
  }
  EXPECT_FALSE(read_mcp_message(R"({"jsonrpc":"2.0","method":"ping","params":{"id":3}})").raw_id.has_value());
}

TEST(McpMessageTest, AnIdSpelledWithEscapesIsStillFound) {
  const McpMessage message = read_mcp_message(R"({"jsonrpc":"2.0","\u0069d":7,"method":"ping"})");
  ASSERT_TRUE(message.raw_id.has_value());
  EXPECT_EQ(*message.raw_id, "7");
}

TEST(McpMessageTest, RequestIdAndProgressTokenAreKeptExactly) {
  const McpMessage cancel = read_mcp_message(
      R"({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1180591620717411303424,"reason":"x"}})");
  ASSERT_TRUE(cancel.raw_request_id.has_value());
  EXPECT_EQ(*cancel.raw_request_id, "1180591620717411303424");
  const McpMessage call = read_mcp_message(
      R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"bash","_meta":{"progressToken":2.50},"arguments":{}}})");
  ASSERT_TRUE(call.raw_progress_token.has_value());
  EXPECT_EQ(*call.raw_progress_token, "2.50");
  EXPECT_FALSE(read_mcp_message(R"({"jsonrpc":"2.0","id":1,"method":"x","params":{"arguments":{"_meta":{"progressToken":1}}}})")
                   .raw_progress_token.has_value());
}

TEST(McpMessageTest, LoneSurrogatesBecomeReplacementCharacters) {
  struct Case {
    const char* escaped;
    std::string decoded;
  };
  const Case cases[] = {
      {R"(\ud800)", kReplacement},
      {R"(\udc00)", kReplacement},
      {R"(ab\uD83D)", std::string("ab") + kReplacement},
      {R"(\ud800\u0041)", std::string(kReplacement) + "A"},
      {R"(\ud800\ud800)", std::string(kReplacement) + kReplacement},
      {R"(\ud83d\ude00)", "\xF0\x9F\x98\x80"},  // a proper pair stays: U+1F600
      {R"(\\ud800)", "\\ud800"},                // an escaped backslash, not an escape
  };
  for (const Case& each : cases) {
    const McpMessage message =
        read_mcp_message(std::string(R"({"jsonrpc":"2.0","id":1,"method":"x","params":{"text":")") + each.escaped + "\"}}");
    ASSERT_TRUE(message.error.empty()) << each.escaped << ": " << message.error;
    EXPECT_EQ(message.value.at("params").at("text").as_string(), each.decoded) << each.escaped;
  }
}

TEST(McpMessageTest, BytesThatAreNotUtf8BecomeReplacementCharacters) {
  const McpMessage message = read_mcp_message("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"p\xffing\"}");
  ASSERT_TRUE(message.error.empty()) << message.error;
  EXPECT_EQ(message.value.at("method").as_string(), std::string("p") + kReplacement + "ing");
}

TEST(McpMessageTest, NestingPastTheLimitIsRefusedNamingItAndTheIdIsFound) {
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  for (const std::string& text :
       {R"({"jsonrpc":"2.0","id":"deep","method":"tools/call","params":{"arguments":{"x":)" + deep + "}}}",
        R"({"jsonrpc":"2.0","method":"tools/call","params":{"arguments":{"x":)" + deep + R"(}},"id":"deep"})"}) {
    const McpMessage message = read_mcp_message(text);
    EXPECT_THAT(message.error, HasSubstr("at most 64"));
    EXPECT_TRUE(message.value.is_null());
    ASSERT_TRUE(message.raw_id.has_value());
    EXPECT_EQ(*message.raw_id, "\"deep\"");
  }
  EXPECT_FALSE(read_mcp_message(deep).raw_id.has_value());
}

TEST(McpMessageTest, SixtyFourLevelsAreTakenAndSixtyFiveAreNot) {
  const auto nested = [](std::size_t levels) {  // the message object is the first level
    return R"({"jsonrpc":"2.0","id":1,"method":"x","params":)" + std::string(levels - 2, '[') + "{}" +
           std::string(levels - 2, ']') + "}";
  };
  EXPECT_TRUE(read_mcp_message(nested(McpMessage::kMaximumDepth)).error.empty());
  EXPECT_THAT(read_mcp_message(nested(McpMessage::kMaximumDepth + 1)).error, HasSubstr("65 levels deep"));
}

TEST(McpMessageTest, AnIdBeforeASyntaxErrorIsFound) {
  const McpMessage message = read_mcp_message(R"({"jsonrpc":"2.0","id":5,"method":"ping","params":{)");
  EXPECT_FALSE(message.error.empty());
  ASSERT_TRUE(message.raw_id.has_value());
  EXPECT_EQ(*message.raw_id, "5");
  EXPECT_FALSE(read_mcp_message(R"({"jsonrpc":"2.0","id":"unterminated)").raw_id.has_value());
  EXPECT_FALSE(read_mcp_message(R"({"jsonrpc":"2.0","id":tru,"method":"ping"})").raw_id.has_value());
}

TEST(McpMessageTest, RequestIdKeysMatchStringsByValueAndNumbersByText) {
  EXPECT_EQ(request_id_key("\"a\""), request_id_key("\"\\u0061\""));
  EXPECT_NE(request_id_key("1"), request_id_key("\"1\""));
  EXPECT_EQ(request_id_key("1180591620717411303424"), "1180591620717411303424");
}

}  // namespace
}  // namespace deskd::tools::testing
