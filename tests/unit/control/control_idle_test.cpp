// Connections that hold a place without using it (issue 27): a client that sends no
// complete request within the request deadline is told so and closed; one that follows
// events, or keeps sending requests, keeps its place. And max_clients_per_uid's share.
#include <sys/socket.h>
#include <sys/time.h>

#include <chrono>
#include <string>
#include <thread>

#include "unit/control/control_server_fixture.h"

namespace deskd::control {
namespace {

using namespace std::chrono_literals;
using test_support::ControlServerTest;
namespace json = boost::json;

constexpr std::chrono::milliseconds kDeadline{300};

class ControlIdleTest : public ControlServerTest {
 protected:
  void adjust(ControlServerSettings& settings) override { settings.request_deadline = kDeadline; }
};

// A read that waits longer than this fails the test instead of hanging it.
void limit_idle_waits(int fd) {
  timeval timeout{10, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
}

TEST_F(ControlIdleTest, AClientThatSendsNothingIsToldAndClosedAtTheDeadline) {
  ControlClient silent = connect();
  limit_idle_waits(silent.fd());
  const auto started = std::chrono::steady_clock::now();
  auto told = silent.read();
  ASSERT_TRUE(told.ok());
  ASSERT_TRUE(told->has_value()) << "closed without a word";
  EXPECT_GE(std::chrono::steady_clock::now() - started, kDeadline - 50ms);
  EXPECT_EQ((**told).at("code"), "idle");
  EXPECT_NE(std::string((**told).at("error").as_string()).find("no complete request within 0.3 seconds"), std::string::npos)
      << json::serialize(**told);
  auto end = silent.read();
  ASSERT_TRUE(end.ok());
  EXPECT_FALSE(end->has_value()) << "still open after the idle line";
}

TEST_F(ControlIdleTest, AHalfLineIsNoRequest) {
  ControlClient trickling = connect();
  limit_idle_waits(trickling.fd());
  ASSERT_EQ(::send(trickling.fd(), R"({"op": "desks")", 14, MSG_NOSIGNAL), 14);
  auto told = trickling.read();
  ASSERT_TRUE(told.ok() && told->has_value());
  EXPECT_EQ((**told).at("code"), "idle");
}

TEST_F(ControlIdleTest, AClientThatKeepsAskingOrFollowsKeepsItsPlace) {
  ControlClient asking = connect();
  ControlClient following = connect();
  limit_idle_waits(asking.fd());
  limit_idle_waits(following.fd());
  auto followed = following.call(json::object{{"op", "follow"}, {"desk", "a"}});
  ASSERT_TRUE(followed.ok());
  EXPECT_EQ(followed->at("ok"), true);
  for (int round = 0; round < 6; ++round) {  // twice the deadline in all
    std::this_thread::sleep_for(kDeadline / 3);
    auto answered = asking.call(json::object{{"op", "desks"}});
    ASSERT_TRUE(answered.ok()) << "round " << round;
    EXPECT_EQ(answered->at("ok"), true);
  }
  // The follower, silent since its follow, is still served.
  auto status = following.call(json::object{{"op", "desks"}});
  ASSERT_TRUE(status.ok());
  EXPECT_EQ(status->at("ok"), true);
}

TEST(MaxClientsPerUid, AQuarterOfMaxClientsAndAtLeastFour) {
  EXPECT_EQ(max_clients_per_uid(256), 64u);
  EXPECT_EQ(max_clients_per_uid(1000), 250u);
  EXPECT_EQ(max_clients_per_uid(8), 4u);
  EXPECT_EQ(max_clients_per_uid(1), 4u);
}

}  // namespace
}  // namespace deskd::control
