#include "runner/tools/output_collector.h"

#include <gtest/gtest.h>

namespace deskd::tools {
namespace {

TEST(OutputCollectorTest, KeepsShortOutputWhole) {
  OutputCollector collector(100);
  collector.append("hello ");
  collector.append("world\n");
  collector.finish();
  EXPECT_EQ(collector.text(), "hello world\n");
  EXPECT_FALSE(collector.truncated());
}

TEST(OutputCollectorTest, JoinsCharactersSplitAcrossReads) {
  OutputCollector collector(100);
  const std::string rupee = "\xE2\x82\xB9";  // ₹
  collector.append(rupee.substr(0, 1));
  collector.append(rupee.substr(1, 1));
  collector.append(rupee.substr(2) + "5");
  collector.finish();
  EXPECT_EQ(collector.text(), rupee + "5");
  EXPECT_EQ(collector.total_characters(), 2u);
}

TEST(OutputCollectorTest, InvalidBytesBecomeReplacementCharacters) {
  OutputCollector collector(100);
  collector.append("a\xFF" "b\xC3");  // a stray byte, then a sequence cut short by the end
  collector.finish();
  EXPECT_EQ(collector.text(), "a\xEF\xBF\xBD" "b\xEF\xBF\xBD");
  OutputCollector overlong(100);
  overlong.append("\xC0\xAF\xED\xA0\x80");  // an overlong '/', then a surrogate
  overlong.finish();
  EXPECT_EQ(overlong.text().find('/'), std::string::npos);
}

TEST(OutputCollectorTest, CountsCharactersNotBytes) {
  OutputCollector collector(5);
  collector.append("\xE2\x82\xB9\xE2\x82\xB9\xE2\x82\xB9\xE2\x82\xB9\xE2\x82\xB9");  // five rupee signs
  collector.finish();
  EXPECT_FALSE(collector.truncated());
  EXPECT_EQ(collector.text().size(), 15u);
}

TEST(OutputCollectorTest, LongOutputKeepsItsStartAndEndWithinTheMaximum) {
  OutputCollector collector(80);
  for (int line = 1; line <= 10000; ++line) collector.append(std::to_string(line) + "\n");
  collector.finish();
  const std::string text = collector.text();
  EXPECT_TRUE(collector.truncated());
  EXPECT_LE(text.size(), 80u);
  EXPECT_EQ(text.rfind("1\n2\n", 0), 0u);
  EXPECT_EQ(text.substr(text.size() - 6), "10000\n");
  const auto note = text.find(" characters left out ...]");
  ASSERT_NE(note, std::string::npos);
  // The note's count plus what is kept is everything.
  const auto count_start = text.rfind("[... ", note) + 5;
  const auto left_out = std::stoull(text.substr(count_start, note - count_start));
  const auto note_line = text.substr(text.rfind("\n[... ", note), note + 26 - text.rfind("\n[... ", note));
  EXPECT_EQ(left_out + (text.size() - note_line.size()), collector.total_characters());
}

// A flood read in large pieces takes the ASCII fast path over long runs; read a byte at a
// time it goes character by character. Both must keep the same text and count.
TEST(OutputCollectorTest, LargeReadsKeepWhatSmallReadsKeep) {
  std::string flood;
  std::uint32_t seed = 12345;
  const auto next = [&seed] { return seed = seed * 1103515245u + 12345u; };
  while (flood.size() < 300000) {
    switch (next() % 16) {
      case 0: flood += "\xE2\x82\xB9"; break;             // a rupee sign
      case 1: flood += "\xF0\x9F\x93\x88"; break;         // an emoji, four bytes
      case 2: flood += static_cast<char>(0x80 + next() % 0x80); break;  // invalid or cut short
      case 3: flood += "\xE2\x82"; break;                   // a sequence cut short
      default: flood.append(next() % 3000, static_cast<char>('a' + next() % 26)); break;
    }
  }
  for (const std::size_t maximum : {std::size_t{0}, std::size_t{1}, std::size_t{100}, std::size_t{20000}}) {
    OutputCollector whole(maximum);
    whole.append(flood);
    whole.finish();
    OutputCollector bytewise(maximum);
    for (const char byte : flood) bytewise.append(std::string_view(&byte, 1));
    bytewise.finish();
    EXPECT_EQ(whole.total_characters(), bytewise.total_characters()) << maximum;
    EXPECT_EQ(whole.text(), bytewise.text()) << maximum;
    EXPECT_TRUE(whole.truncated());
  }
}

TEST(OutputCollectorTest, AnAsciiFloodKeepsItsStartItsEndAndItsCount) {
  OutputCollector collector(100);
  collector.append("start");
  collector.append(std::string(5000000, 'x'));
  collector.append("\xE2\x82\xB9" "end");
  collector.finish();
  const std::string text = collector.text();
  EXPECT_EQ(collector.total_characters(), 5u + 5000000u + 4u);
  EXPECT_EQ(text.rfind("startxxx", 0), 0u);
  EXPECT_EQ(text.substr(text.size() - 7), "x\xE2\x82\xB9" "end");
  const auto note = text.find("\n[... ");
  ASSERT_NE(note, std::string::npos);
  const auto left_out = std::stoull(text.substr(note + 6));
  const std::string note_text = "\n[... " + std::to_string(left_out) + " characters left out ...]\n";
  // Characters kept (the rupee sign is one) plus those left out is everything.
  EXPECT_EQ(left_out + (text.size() - note_text.size() - 2), collector.total_characters());
}

TEST(OutputCollectorTest, ResetForgetsEverything) {
  OutputCollector collector(10);
  collector.append("0123456789abcdef");
  collector.reset();
  collector.append("new");
  collector.finish();
  EXPECT_EQ(collector.text(), "new");
}

}  // namespace
}  // namespace deskd::tools
