// The control server under hostile clients, in process: a client that never reads its
// replies, a send too large, one client too many, a replay larger than a client's buffer,
// and the two phases of a shutdown.
#include <sys/socket.h>
#include <sys/time.h>

#include <chrono>
#include <future>
#include <string>
#include <thread>

#include "unit/control/control_server_fixture.h"

namespace deskd::control {
namespace {

using namespace std::chrono_literals;
using test_support::ControlServerTest;
namespace asio = boost::asio;
namespace json = boost::json;

constexpr std::size_t kSmallBuffer = 64 * 1024;

// A read that waits longer than this fails the test instead of hanging it.
void limit_waits(int fd) {
  timeval timeout{10, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
}

// Reads until deskd closes the connection; the lines it sent, parsed.
std::vector<json::object> read_to_end(ControlClient& client) {
  std::vector<json::object> lines;
  for (;;) {
    auto line = client.read();
    if (!line.ok() || !*line) return lines;
    lines.push_back(std::move(**line));
  }
}

class ControlLimitsTest : public ControlServerTest {
 protected:
  void adjust(ControlServerSettings& settings) override {
    settings.client_buffer_bytes = kSmallBuffer;
    settings.max_clients = 3;
  }

  // Runs `action` on the server's loop and waits for it.
  template <typename Action>
  void on_loop(Action action) {
    std::promise<void> done;
    asio::post(io_, [&] {
      action();
      done.set_value();
    });
    done.get_future().wait();
  }

  std::size_t connections() {
    std::size_t count = 0;
    on_loop([&] { count = server_->connection_count(); });
    return count;
  }
};

TEST_F(ControlLimitsTest, AClientThatNeverReadsIsToldItIsTooSlowAndDroppedAndOthersAreStillAnswered) {
  ControlClient slow = connect();
  limit_waits(slow.fd());
  // 20,000 requests, never reading a reply while writing: about 600 KB of replies for a
  // cap of 64 KiB. deskd stops reading once it drops the client, so the writes then fail.
  std::string requests;
  for (int index = 0; index < 20000; ++index) requests += R"({"id": )" + std::to_string(index) + R"(, "op": "status"})" "\n";
  std::size_t written = 0;
  while (written < requests.size()) {
    const ssize_t count = ::send(slow.fd(), requests.data() + written, requests.size() - written, MSG_NOSIGNAL);
    if (count <= 0) break;
    written += static_cast<std::size_t>(count);
  }
  ControlClient other = connect();
  auto answered = other.call(json::object{{"op", "status"}, {"desk", "a"}});
  ASSERT_TRUE(answered.ok());
  EXPECT_EQ(answered->at("ok"), true);

  const auto lines = read_to_end(slow);
  ASSERT_FALSE(lines.empty());
  const json::object& last = lines.back();
  EXPECT_EQ(last.at("code"), "too_slow") << json::serialize(last);
  EXPECT_NE(std::string(last.at("error").as_string()).find("You read too slowly"), std::string::npos);
  // What came before were whole replies, and far fewer than were asked for.
  EXPECT_LT(lines.size(), 20000u);
  for (std::size_t index = 0; index + 1 < lines.size(); ++index) ASSERT_EQ(lines[index].at("ok"), true);
  EXPECT_EQ(connections(), 1u);  // the other client
}

TEST_F(ControlLimitsTest, ASendTooLargeIsRefusedAndTheConnectionStays) {
  ControlClient client = connect();
  limit_waits(client.fd());
  auto refused = client.call(json::object{{"op", "send"}, {"desk", "a"}, {"text", std::string(kMaximumSendTextBytes + 1, 'x')}});
  ASSERT_TRUE(refused.ok());
  EXPECT_EQ(refused->at("ok"), false);
  EXPECT_EQ(refused->at("code"), "too_large");
  EXPECT_NE(std::string(refused->at("error").as_string()).find("at most 262144 bytes"), std::string::npos);
  auto largest = client.call(json::object{{"op", "send"}, {"desk", "a"}, {"text", std::string(kMaximumSendTextBytes, 'x')}});
  ASSERT_TRUE(largest.ok());
  EXPECT_EQ(largest->at("ok"), true);
}

// The test process is deskd's own uid here, so past max_clients it still takes the places
// kept for root and deskd's uid; it is refused once those are taken too.
TEST_F(ControlLimitsTest, OneClientPastTheCapIsRefusedWithALineAndTheNextIsServedOnceOneLeaves) {
  const std::size_t served = 3 + kReservedPrivilegedClients;
  std::vector<ControlClient> clients;
  for (std::size_t index = 0; index < served; ++index) {
    clients.push_back(connect());
    ASSERT_TRUE(clients.back().call(json::object{{"op", "desks"}}).ok());  // accepted and served
  }
  ControlClient extra = connect();
  limit_waits(extra.fd());
  const auto lines = read_to_end(extra);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0].at("code"), "too_many_clients");
  EXPECT_NE(std::string(lines[0].at("error").as_string()).find("max_clients"), std::string::npos);

  clients.pop_back();  // one leaves
  const auto deadline = std::chrono::steady_clock::now() + 5s;
  while (connections() > served - 1 && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(5ms);
  ControlClient next_one = connect();
  limit_waits(next_one.fd());
  auto reply = next_one.call(json::object{{"op", "desks"}});
  ASSERT_TRUE(reply.ok());
  EXPECT_EQ(reply->at("ok"), true);
}

TEST_F(ControlLimitsTest, AReplayLargerThanTheClientsBufferArrivesWholeAndInOrder) {
  // About 2 MB of kept events, 32 times the client's buffer.
  const std::string text(1000, 'r');
  for (int index = 0; index < 2000; ++index) service_->bus.publish("a", "MODEL_TEXT", {{"n", index}, {"text", text}});
  ControlClient client = connect();
  limit_waits(client.fd());
  ASSERT_TRUE(client.send(json::object{{"id", "f"}, {"op", "follow"}, {"replay", true}}).ok());
  std::this_thread::sleep_for(200ms);  // the client is slow to start reading
  EXPECT_EQ(next(client).at("ok"), true);
  for (int expected = 0; expected < 2000; ++expected) {
    const json::object line = next(client);
    ASSERT_TRUE(line.contains("event")) << json::serialize(line);
    ASSERT_EQ(line.at("event").at("data").at("n"), expected);
  }
  EXPECT_EQ(next(client).at("replayed"), 2000);
  service_->bus.publish("a", "LIVE", {});
  EXPECT_EQ(next(client).at("event").at("kind"), "LIVE");
}

TEST_F(ControlLimitsTest, WhileStoppingRequestsAreAnsweredStoppingAndFollowsAreToldThenEnded) {
  ControlClient follower = connect();
  limit_waits(follower.fd());
  ASSERT_TRUE(follower.send(json::object{{"id", "f"}, {"op", "follow"}}).ok());
  EXPECT_EQ(next(follower).at("ok"), true);
  on_loop([this] { server_->begin_stopping("deskd is stopping."); });
  const json::object told = next(follower);
  EXPECT_EQ(told.at("id"), "f");
  EXPECT_EQ(told.at("stopping"), true);
  // Follows go on through the grace...
  service_->bus.publish("a", "DESK_STOPPED", {});
  EXPECT_EQ(next(follower).at("event").at("kind"), "DESK_STOPPED");
  // ...and new requests, on an old connection or a new one, are answered, not hung up on.
  ControlClient late = connect();
  limit_waits(late.fd());
  auto refused = late.call(json::object{{"op", "status"}});
  ASSERT_TRUE(refused.ok());
  EXPECT_EQ(refused->at("ok"), false);
  EXPECT_EQ(refused->at("code"), "stopping");
  EXPECT_EQ(refused->at("error"), "deskd is stopping.");

  on_loop([this] { asio::co_spawn(io_, server_->stop(1s), asio::detached); });
  const auto rest = read_to_end(follower);
  ASSERT_EQ(rest.size(), 1u);
  EXPECT_EQ(rest[0].at("id"), "f");
  EXPECT_EQ(rest[0].at("code"), "stopping");
  EXPECT_EQ(read_to_end(late).size(), 0u);  // closed too
}

}  // namespace
}  // namespace deskd::control
