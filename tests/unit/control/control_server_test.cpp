// The control server against a fake daemon, in process: real Unix sockets, a real event
// loop on its own thread, and blocking clients in the test's threads.
#include "runner/control/control_server.h"

#include <atomic>

#include "unit/control/control_server_fixture.h"

namespace deskd::control {
namespace {

using test_support::ControlServerTest;
namespace asio = boost::asio;
namespace json = boost::json;

TEST_F(ControlServerTest, TheSocketIsOpenToItsGroupOnly) {
  struct stat status {};
  ASSERT_EQ(::stat(socket_.c_str(), &status), 0);
  EXPECT_TRUE(S_ISSOCK(status.st_mode));
  EXPECT_EQ(status.st_mode & 0777, 0660u);
}

TEST_F(ControlServerTest, BadLinesGetErrorRepliesAndTheConnectionStays) {
  ControlClient client = connect();
  ASSERT_TRUE(client.send(json::object{{"id", 1}, {"op", "launch"}}).ok());
  EXPECT_EQ(next(client).at("code"), "unknown_operation");
  const std::string garbage = "{this is not json\n";
  ASSERT_EQ(::write(client.fd(), garbage.data(), garbage.size()), static_cast<ssize_t>(garbage.size()));
  EXPECT_EQ(next(client).at("code"), "bad_request");
  ASSERT_TRUE(client.send(json::object{{"id", 2}, {"op", "send"}, {"desk", "zz"}, {"text", "x"}}).ok());
  auto unknown = next(client);
  EXPECT_EQ(unknown.at("code"), "unknown_desk");
  EXPECT_EQ(unknown.at("error"), "There is no desk 'zz'.");
  auto refused = client.call(json::object{{"op", "send"}, {"desk", "a"}, {"text", "refuse me"}});
  ASSERT_TRUE(refused.ok());
  EXPECT_EQ(refused->at("code"), "refused");
  auto sent = client.call(json::object{{"op", "send"}, {"desk", "a"}, {"text", "hello"}});
  ASSERT_TRUE(sent.ok());
  EXPECT_EQ(sent->at("ok"), true);
  EXPECT_EQ(sent->at("trigger"), "t-1");
  EXPECT_TRUE(service_->last_sender.starts_with("uid " + std::to_string(::geteuid()))) << service_->last_sender;
}

TEST_F(ControlServerTest, AReloadIsAnsweredWithWhatItDidOnBehalfOfThePeer) {
  ControlClient client = connect();
  auto reloaded = client.call(json::object{{"op", "reload"}});
  ASSERT_TRUE(reloaded.ok());
  EXPECT_EQ(reloaded->at("ok"), true);
  EXPECT_EQ(reloaded->at("reload").at("kept"), (json::array{"one"}));
  ASSERT_EQ(service_->reloads.size(), 1u);
  EXPECT_TRUE(service_->reloads[0].starts_with("uid " + std::to_string(::geteuid()))) << service_->reloads[0];
}

TEST_F(ControlServerTest, ApprovalsAreListedAndDecidedOnBehalfOfThePeer) {
  ControlClient client = connect();
  auto listed = client.call(json::object{{"op", "approvals"}});
  ASSERT_TRUE(listed.ok());
  ASSERT_EQ(listed->at("ok"), true);
  const json::object& waiting = listed->at("approvals").as_array().at(0).as_object();
  EXPECT_EQ(waiting.at("id"), "ap-0123456789ab");
  EXPECT_EQ(waiting.at("url"), "https://api.kite.trade/orders/regular");
  EXPECT_EQ(waiting.at("expires_in_seconds"), 60);
  EXPECT_FALSE(waiting.contains("decision"));
  auto approved = client.call(json::object{{"op", "approve"}, {"approval", "ap-0123456789ab"}});
  ASSERT_TRUE(approved.ok());
  EXPECT_EQ(approved->at("approval").at("decision"), "approved");
  EXPECT_TRUE(approved->at("approval").at("by").as_string().starts_with("uid " + std::to_string(::geteuid())))
      << approved->at("approval");
  auto denied = client.call(json::object{{"op", "deny"}, {"approval", "ap-ffffffffffff"}});
  ASSERT_TRUE(denied.ok());
  EXPECT_EQ(denied->at("ok"), false);
  EXPECT_EQ(denied->at("code"), "not_found");
  EXPECT_EQ(denied->at("error"), "There is no request ap-ffffffffffff waiting for approval on desk a.");
}

TEST_F(ControlServerTest, TheLedgerIsAnsweredLaterWithItsLinesAndWhatVerifyingFound) {
  ControlClient client = connect();
  auto read = client.call(json::object{{"op", "ledger"}, {"desk", "a"}});
  ASSERT_TRUE(read.ok());
  ASSERT_EQ(read->at("ok"), true);
  EXPECT_EQ(read->at("ledger").at("lines").as_array().size(), 2u);
  EXPECT_FALSE(read->at("ledger").as_object().contains("verified"));
  auto verified = client.call(json::object{{"op", "ledger"}, {"desk", "a"}, {"verify", true}});
  ASSERT_TRUE(verified.ok());
  EXPECT_EQ(verified->at("ledger").at("verified"), false);
  EXPECT_EQ(verified->at("ledger").at("problem"), "ledger.jsonl:2: prev does not match");
  auto refused = client.call(json::object{{"op", "ledger"}, {"desk", "a"}, {"since", "yesterday"}});
  ASSERT_TRUE(refused.ok());
  EXPECT_EQ(refused->at("code"), "bad_request");
}

TEST_F(ControlServerTest, TheBudgetIsAnsweredWithEachCapAndWhatIsLeft) {
  ControlClient client = connect();
  auto read = client.call(json::object{{"op", "budget"}, {"desk", "a"}});
  ASSERT_TRUE(read.ok());
  ASSERT_EQ(read->at("ok"), true) << json::serialize(*read);
  const json::object& budget = read->at("budget").as_object();
  EXPECT_EQ(budget.at("daily_usd"), 5.0);
  EXPECT_NEAR(budget.at("left_usd").as_double(), 1.2, 1e-9);
  EXPECT_FALSE(budget.contains("daily_tokens")) << "a cap the desk does not have is absent";
  auto raised = client.call(json::object{{"op", "budget"}, {"desk", "a"}, {"add_usd", 1}});
  ASSERT_TRUE(raised.ok());
  EXPECT_EQ(raised->at("budget").at("daily_usd"), 6.0) << "the cap with today's raise";
  EXPECT_EQ(raised->at("budget").at("added_usd"), 1.0);
}

TEST_F(ControlServerTest, AnOversizedLineGetsAnErrorAndAClose) {
  ControlClient client = connect();
  const std::string huge(kMaximumRequestBytes + 100, 'x');
  std::thread writer([&] {
    // Stops with an error once the server closes; all that matters is what it answers.
    [[maybe_unused]] const ssize_t written = ::write(client.fd(), huge.data(), huge.size());
  });
  auto reply = next(client);
  EXPECT_EQ(reply.at("code"), "too_long");
  auto after = client.read();
  ASSERT_TRUE(after.ok());
  EXPECT_FALSE(after->has_value());  // closed
  ::shutdown(client.fd(), SHUT_RDWR);
  writer.join();
}

TEST_F(ControlServerTest, ASecondServerOnTheSamePathIsRefusedAndAStaleSocketIsReplaced) {
  asio::io_context other;
  auto second = ControlServer::open(other.get_executor(), settings(), *service_);
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.error().what, "Another deskd is already listening on " + socket_.native() + ".");

  // A socket file nobody listens on, as a crashed deskd leaves it.
  const auto stale = folder_ / "stale.sock";
  {
    asio::io_context scratch;
    asio::local::stream_protocol::acceptor acceptor(scratch, asio::local::stream_protocol::endpoint(stale.native()));
  }
  ASSERT_TRUE(std::filesystem::exists(stale));
  ControlServerSettings replaced = settings();
  replaced.socket_path = stale;
  auto third = ControlServer::open(other.get_executor(), replaced, *service_);
  EXPECT_TRUE(third.ok()) << third.error().what;

  // Anything that is not a socket is never replaced.
  const auto regular = folder_ / "file";
  std::FILE* file = std::fopen(regular.c_str(), "w");
  std::fclose(file);
  replaced.socket_path = regular;
  auto fourth = ControlServer::open(other.get_executor(), replaced, *service_);
  ASSERT_FALSE(fourth.ok());
  EXPECT_EQ(fourth.error().what, regular.native() + " exists and is not a socket; deskd will not replace it.");
}

TEST_F(ControlServerTest, FollowStreamsOneDeskAndReplaysFromAnEventId) {
  service_->bus.publish("a", "OLD", {});      // e-1
  service_->bus.publish("b", "OTHER", {});    // e-2
  service_->bus.publish("a", "KEPT", {});     // e-3
  ControlClient client = connect();
  ASSERT_TRUE(client.send(json::object{{"id", "f"}, {"op", "follow"}, {"desk", "a"}, {"from", "e-1"}}).ok());
  EXPECT_EQ(next(client).at("ok"), true);
  EXPECT_EQ(next(client).at("event").at("kind"), "KEPT");
  EXPECT_EQ(next(client).at("replayed"), 1);
  service_->bus.publish("b", "NOT_MINE", {});
  service_->bus.publish("a", "NEW", {});
  EXPECT_EQ(next(client).at("event").at("kind"), "NEW");
  ASSERT_TRUE(client.send(json::object{{"id", "u"}, {"op", "unfollow"}, {"follow", "f"}}).ok());
  EXPECT_EQ(next(client).at("ok"), true);
  service_->bus.publish("a", "AFTER", {});
  auto reply = client.call(json::object{{"op", "desks"}});
  ASSERT_TRUE(reply.ok());
  EXPECT_EQ(reply->at("ok"), true);  // and no AFTER event came before it
}

TEST_F(ControlServerTest, AStuckClientDelaysNobody) {
  // Follows, then never reads: its socket buffer fills and its subscription drops events.
  ControlClient stuck = connect();
  ASSERT_TRUE(stuck.send(json::object{{"id", 1}, {"op", "follow"}}).ok());
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  const std::string big(4000, 'x');
  const auto start = std::chrono::steady_clock::now();
  for (int index = 0; index < 20000; ++index) service_->bus.publish("a", "MODEL_TEXT", {{"text", big}});
  const auto publishing = std::chrono::steady_clock::now() - start;
  // 80 MB of events for a client that reads nothing: publishing never waited for it.
  EXPECT_LT(publishing, std::chrono::seconds(10));
  ControlClient other = connect();
  const auto asked = std::chrono::steady_clock::now();
  auto reply = other.call(json::object{{"op", "status"}, {"desk", "a"}});
  ASSERT_TRUE(reply.ok());
  EXPECT_EQ(reply->at("ok"), true);
  EXPECT_LT(std::chrono::steady_clock::now() - asked, std::chrono::seconds(2));
}

TEST_F(ControlServerTest, ManyClientsAtOnce) {
  std::atomic<int> answered{0};
  std::vector<std::thread> clients;
  for (int index = 0; index < 32; ++index) {
    clients.emplace_back([&] {
      auto client = ControlClient::connect(socket_);
      if (!client.ok()) return;
      for (int request = 0; request < 20; ++request) {
        auto reply = client->call(json::object{{"op", request % 2 ? "desks" : "status"}});
        if (reply.ok() && reply->at("ok") == true) ++answered;
      }
    });
  }
  for (auto& client : clients) client.join();
  EXPECT_EQ(answered.load(), 32 * 20);
}

TEST_F(ControlServerTest, ClosingTheServerEndsEveryConnection) {
  ControlClient client = connect();
  ASSERT_TRUE(client.call(json::object{{"op", "desks"}}).ok());
  asio::post(io_, [this] { server_->close(); });
  auto line = client.read();
  ASSERT_TRUE(line.ok());
  EXPECT_FALSE(line->has_value());
}

}  // namespace
}  // namespace deskd::control
