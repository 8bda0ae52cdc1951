#include "base/unique_fd.h"

#include <fcntl.h>
#include <unistd.h>

#include <gtest/gtest.h>

namespace deskd {
namespace {

bool is_open(int fd) { return ::fcntl(fd, F_GETFD) != -1; }

TEST(UniqueFdTest, ClosesOnDestruction) {
  int raw = -1;
  {
    UniqueFd fd(::open("/dev/null", O_RDONLY | O_CLOEXEC));
    raw = fd.get();
    ASSERT_TRUE(fd.valid());
    EXPECT_TRUE(is_open(raw));
  }
  EXPECT_FALSE(is_open(raw));
}

TEST(UniqueFdTest, MoveTransfersOwnership) {
  UniqueFd first(::open("/dev/null", O_RDONLY | O_CLOEXEC));
  const int raw = first.get();
  UniqueFd second(std::move(first));
  EXPECT_FALSE(first.valid());  // NOLINT: checking the moved-from state on purpose
  EXPECT_EQ(second.get(), raw);
  UniqueFd third;
  third = std::move(second);
  EXPECT_EQ(third.get(), raw);
  EXPECT_TRUE(is_open(raw));
}

TEST(UniqueFdTest, ReleaseGivesUpOwnership) {
  UniqueFd fd(::open("/dev/null", O_RDONLY | O_CLOEXEC));
  const int raw = fd.release();
  EXPECT_FALSE(fd.valid());
  EXPECT_TRUE(is_open(raw));
  ::close(raw);
}

TEST(RetryOnEintrTest, ReturnsTheFirstResultThatIsNotEintr) {
  int calls = 0;
  const int result = retry_on_eintr([&] {
    ++calls;
    if (calls < 3) {
      errno = EINTR;
      return -1;
    }
    return 5;
  });
  EXPECT_EQ(result, 5);
  EXPECT_EQ(calls, 3);
}

}  // namespace
}  // namespace deskd
