#include "runner/app/cli_values.h"

#include <gtest/gtest.h>

namespace deskd::app {
namespace {

TEST(ParseByteSizeTest, AcceptsUnitsInPowersOf1024) {
  EXPECT_EQ(parse_byte_size("512"), 512u);
  EXPECT_EQ(parse_byte_size("64K"), 64u << 10);
  EXPECT_EQ(parse_byte_size("256M"), 256u << 20);
  EXPECT_EQ(parse_byte_size("256MiB"), 256u << 20);
  EXPECT_EQ(parse_byte_size("1G"), 1ull << 30);
  EXPECT_EQ(parse_byte_size("2GB"), 2ull << 30);
}

TEST(ParseByteSizeTest, RefusesWhatIsNotASize) {
  for (const char* text : {"", "M", "-1", "1.5G", "12X", "1 G", "99999999999999999999", "20000000000T"}) {
    EXPECT_FALSE(parse_byte_size(text).has_value()) << text;
  }
}

TEST(ParseCountTest, AcceptsOnlyPlainNumbers) {
  EXPECT_EQ(parse_count("64"), 64u);
  EXPECT_FALSE(parse_count("").has_value());
  EXPECT_FALSE(parse_count("+3").has_value());
  EXPECT_FALSE(parse_count("3a").has_value());
}

}  // namespace
}  // namespace deskd::app
