#include "base/result.h"

#include <cerrno>
#include <memory>

#include <gtest/gtest.h>

namespace deskd {
namespace {

Result<int> parse_positive(int value) {
  if (value <= 0) return Error::make(ErrorCode::invalid_argument, "The value is not positive.");
  return value;
}

Result<int> doubled(int value) {
  DESKD_ASSIGN_OR_RETURN(const int parsed, parse_positive(value));
  return parsed * 2;
}

Result<void> check(int value) {
  DESKD_RETURN_IF_ERROR(parse_positive(value));
  return success();
}

TEST(ResultTest, HoldsValueOrError) {
  const Result<int> good = parse_positive(3);
  ASSERT_TRUE(good.ok());
  EXPECT_EQ(*good, 3);
  const Result<int> bad = parse_positive(-1);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().code, ErrorCode::invalid_argument);
  EXPECT_EQ(bad.error().what, "The value is not positive.");
}

TEST(ResultTest, AssignOrReturnPropagatesTheError) {
  EXPECT_EQ(*doubled(4), 8);
  EXPECT_EQ(doubled(0).error().what, "The value is not positive.");
}

TEST(ResultTest, ReturnIfErrorPropagatesTheError) {
  EXPECT_TRUE(check(1).ok());
  EXPECT_FALSE(check(-5).ok());
}

TEST(ResultTest, MoveOnlyValues) {
  Result<std::unique_ptr<int>> result = std::make_unique<int>(7);
  std::unique_ptr<int> taken = std::move(result).value();
  EXPECT_EQ(*taken, 7);
}

TEST(ErrorTest, FromErrnoNamesTheCallAndTheReason) {
  const Error error = Error::from_errno(ENOENT, "Opening /nowhere failed");
  EXPECT_EQ(error.code, ErrorCode::system);
  EXPECT_EQ(error.error_number, ENOENT);
  EXPECT_EQ(error.what, "Opening /nowhere failed: No such file or directory.");
}

}  // namespace
}  // namespace deskd
