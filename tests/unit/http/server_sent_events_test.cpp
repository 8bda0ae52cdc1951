#include "runner/http/server_sent_events.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace deskd::model {
namespace {

std::vector<ServerSentEvent> drain(ServerSentEventParser& parser) {
  std::vector<ServerSentEvent> events;
  while (auto event = parser.next()) events.push_back(std::move(*event));
  return events;
}

std::vector<ServerSentEvent> parse_whole(std::string_view wire) {
  ServerSentEventParser parser;
  EXPECT_TRUE(parser.feed(wire).ok());
  return drain(parser);
}

bool same(const std::vector<ServerSentEvent>& left, const std::vector<ServerSentEvent>& right) {
  if (left.size() != right.size()) return false;
  for (std::size_t index = 0; index < left.size(); ++index) {
    if (left[index].event != right[index].event || left[index].data != right[index].data) return false;
  }
  return true;
}

TEST(ServerSentEventParserTest, NamesAnEventAndJoinsDataLines) {
  auto events = parse_whole("event: message_start\ndata: {\"a\":1}\n\ndata: one\ndata: two\n\n");
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[0].event, "message_start");
  EXPECT_EQ(events[0].data, "{\"a\":1}");
  EXPECT_EQ(events[1].event, "");  // the name does not carry over to the next event
  EXPECT_EQ(events[1].data, "one\ntwo");
}

TEST(ServerSentEventParserTest, FinishCompletesALastEventWithoutItsBlankLine) {
  ServerSentEventParser parser;
  ASSERT_TRUE(parser.feed("event: a\ndata: 1\n\nevent: message_stop\ndata: {\"type\":\"message_stop\"}").ok());
  ASSERT_TRUE(parser.next());
  EXPECT_FALSE(parser.next()) << "not whole until the body is known to have ended";
  EXPECT_TRUE(parser.has_partial_event());
  parser.finish();
  const auto last = parser.next();
  ASSERT_TRUE(last);
  EXPECT_EQ(last->event, "message_stop");
  EXPECT_EQ(last->data, "{\"type\":\"message_stop\"}");
  EXPECT_FALSE(parser.has_partial_event());

  ServerSentEventParser ended_line;  // the line ending came, only the blank line is missing
  ASSERT_TRUE(ended_line.feed("data: [DONE]\r\n").ok());
  ended_line.finish();
  ASSERT_TRUE(ended_line.next());
  ServerSentEventParser nothing;  // a name without data is no event, at the end too
  ASSERT_TRUE(nothing.feed("event: ping\n").ok());
  nothing.finish();
  EXPECT_FALSE(nothing.next());
}

TEST(ServerSentEventParserTest, AcceptsEveryLineEnding) {
  auto events = parse_whole("event: a\r\ndata: 1\r\n\r\nevent: b\rdata: 2\r\rdata: 3\n\n");
  ASSERT_EQ(events.size(), 3u);
  EXPECT_EQ(events[0].event, "a");
  EXPECT_EQ(events[0].data, "1");
  EXPECT_EQ(events[1].event, "b");
  EXPECT_EQ(events[1].data, "2");
  EXPECT_EQ(events[2].data, "3");
}

TEST(ServerSentEventParserTest, StripsOneSpaceAfterTheColonOnly) {
  auto events = parse_whole("data:x\n\ndata:  y\n\ndata: \n\n");
  ASSERT_EQ(events.size(), 3u);
  EXPECT_EQ(events[0].data, "x");
  EXPECT_EQ(events[1].data, " y");
  EXPECT_EQ(events[2].data, "");
}

TEST(ServerSentEventParserTest, ALineWithoutColonIsAFieldWithAnEmptyValue) {
  auto events = parse_whole("data\ndata\n\n");
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].data, "\n");
}

TEST(ServerSentEventParserTest, IgnoresCommentsIdsRetriesAndUnknownFields) {
  auto events = parse_whole(": keep-alive\n\n:ping\nid: 7\nretry: 1000\nfoo: bar\ndata: x\n\n");
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].event, "");
  EXPECT_EQ(events[0].data, "x");
}

TEST(ServerSentEventParserTest, DropsAnEventWithoutData) {
  auto events = parse_whole("event: ping\n\ndata: after\n\n");
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].event, "");
  EXPECT_EQ(events[0].data, "after");
}

TEST(ServerSentEventParserTest, IgnoresAByteOrderMarkAtTheStartOnly) {
  auto events = parse_whole("\xEF\xBB\xBF" "data: x\n\n\xEF\xBB\xBF" "data: y\n\n");
  ASSERT_EQ(events.size(), 1u);  // the second mark makes "\xEF\xBB\xBFdata" an unknown field
  EXPECT_EQ(events[0].data, "x");

  ServerSentEventParser parser;
  ASSERT_TRUE(parser.feed("\xEF").ok());
  ASSERT_TRUE(parser.feed("\xBB").ok());
  ASSERT_TRUE(parser.feed("\xBF" "da").ok());
  ASSERT_TRUE(parser.feed("ta: z\n\n").ok());
  auto split = drain(parser);
  ASSERT_EQ(split.size(), 1u);
  EXPECT_EQ(split[0].data, "z");
}

TEST(ServerSentEventParserTest, AnyCutGivesTheSameEvents) {
  const std::string wire =
      "\xEF\xBB\xBF: hello\r\nevent: content_block_delta\r\ndata: {\"text\":\"a\"}\r\n\r\n"
      "data: line1\rdata: line2\r\rid: 3\nevent: e\ndata\n\n:tail\n";
  const auto expected = parse_whole(wire);
  ASSERT_EQ(expected.size(), 3u);
  for (std::size_t cut = 0; cut <= wire.size(); ++cut) {
    ServerSentEventParser parser;
    ASSERT_TRUE(parser.feed(std::string_view(wire).substr(0, cut)).ok());
    auto events = drain(parser);
    ASSERT_TRUE(parser.feed(std::string_view(wire).substr(cut)).ok());
    for (auto& event : drain(parser)) events.push_back(std::move(event));
    EXPECT_TRUE(same(events, expected)) << "cut at " << cut;
  }
  ServerSentEventParser byte_by_byte;
  std::vector<ServerSentEvent> events;
  for (char character : wire) {
    ASSERT_TRUE(byte_by_byte.feed(std::string_view(&character, 1)).ok());
    for (auto& event : drain(byte_by_byte)) events.push_back(std::move(event));
  }
  EXPECT_TRUE(same(events, expected));
}

TEST(ServerSentEventParserTest, ACarriageReturnAndLineFeedSplitAcrossPiecesEndOneLine) {
  ServerSentEventParser parser;
  ASSERT_TRUE(parser.feed("data: a\r").ok());
  ASSERT_TRUE(parser.feed("\ndata: b\r").ok());
  EXPECT_FALSE(parser.next().has_value());  // the \n was not taken for a blank line
  ASSERT_TRUE(parser.feed("\n\r").ok());
  auto events = drain(parser);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].data, "a\nb");
}

TEST(ServerSentEventParserTest, TellsAPartialEvent) {
  ServerSentEventParser parser;
  EXPECT_FALSE(parser.has_partial_event());
  ASSERT_TRUE(parser.feed("da").ok());
  EXPECT_TRUE(parser.has_partial_event());
  ASSERT_TRUE(parser.feed("ta: x\n").ok());
  EXPECT_TRUE(parser.has_partial_event());
  ASSERT_TRUE(parser.feed("\n").ok());
  EXPECT_FALSE(parser.has_partial_event());
  ASSERT_TRUE(parser.feed(": comment\n").ok());
  EXPECT_FALSE(parser.has_partial_event());
}

TEST(ServerSentEventParserTest, RefusesAnEventPastTheLimit) {
  ServerSentEventParser long_line(16);
  auto fed = long_line.feed("data: " + std::string(20, 'x'));
  ASSERT_FALSE(fed.ok());
  EXPECT_NE(fed.error().what.find("16 bytes"), std::string::npos);

  // Many short data lines add up to one event.
  ServerSentEventParser many_lines(16);
  Result<void> result;
  for (int line = 0; line < 10 && result.ok(); ++line) result = many_lines.feed("data: abc\n");
  EXPECT_FALSE(result.ok());

  // Separate events each under the limit are fine.
  ServerSentEventParser separate(16);
  for (int event = 0; event < 10; ++event) ASSERT_TRUE(separate.feed("data: abc\n\n").ok());
  EXPECT_EQ(drain(separate).size(), 10u);
}

}  // namespace
}  // namespace deskd::model
