// No lock-out of the control socket (issue 27): connections that never send a request hold
// their place for the request deadline (10 s) only, each uid holds at most a quarter of
// max_clients, and root always finds one of the places kept beyond max_clients.

#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "e2e/daemon_fixture.h"
#include "e2e/serve_test_support.h"

namespace deskd::e2e {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

constexpr uid_t kFirstUid = 4242;
constexpr int kUids = 4;            // four users' full shares fill max_clients (256)
constexpr int kShare = 256 / 4;     // control::max_clients_per_uid(256)
constexpr int kTriesPerUid = kShare + 16;

// Connections made as `uid` (its effective uid and gid, which SO_PEERCRED reports); the
// test process is root again afterwards.
std::vector<ControlConnection> connect_as(const ServeDaemon& daemon, uid_t uid, int count) {
  std::vector<ControlConnection> made;
  made.reserve(static_cast<std::size_t>(count));
  if (::setegid(uid) != 0 || ::seteuid(uid) != 0) {
    ADD_FAILURE() << "could not become uid " << uid;
    return made;
  }
  for (int index = 0; index < count; ++index) made.push_back(daemon.connect());
  if (::seteuid(0) != 0 || ::setegid(0) != 0) std::abort();  // the rest of the suite needs root
  return made;
}

std::string allowed_uids() {
  std::string list = "allowed_uids = [";
  for (int index = 0; index <= kUids; ++index) list += (index ? ", " : "") + std::to_string(kFirstUid + index);
  return list + "]\n";
}

TEST_F(ServeE2eTest, IdleConnectionsOfAllowedUsersNeitherKeepRootOutNorStayPastTheDeadline) {
  if (::geteuid() != 0) GTEST_SKIP() << "connecting as other uids needs root";
  rlimit limit{};
  ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &limit), 0);
  limit.rlim_cur = std::max<rlim_t>(limit.rlim_cur, std::min<rlim_t>(limit.rlim_max, 4096));
  ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &limit), 0);
  ServeDaemon daemon({{"one", R"({"text": "hi"})" "\n"}}, allowed_uids());
  ASSERT_NO_FATAL_FAILURE(start(daemon));
  ::chmod(daemon.socket_path().c_str(), 0666);
  ::chmod(fs::path(daemon.socket_path()).parent_path().c_str(), 0755);
  std::this_thread::sleep_for(200ms);  // start()'s own deskctl has gone

  // Four users each try for more than their share: they get exactly their share, and the
  // rest is refused with a line saying so. Each connects in order, so its last ones are
  // the refused ones, and once those are answered deskd has taken all of its connections.
  const auto crowd_started = Clock::now();
  std::vector<ControlConnection> idle;
  for (int user = 0; user < kUids; ++user) {
    const uid_t uid = kFirstUid + static_cast<uid_t>(user);
    std::vector<ControlConnection> tries = connect_as(daemon, uid, kTriesPerUid);
    ASSERT_EQ(tries.size(), static_cast<std::size_t>(kTriesPerUid));
    for (int index = kShare; index < kTriesPerUid; ++index) {
      auto refusal = tries[static_cast<std::size_t>(index)].read_object(5s);
      ASSERT_TRUE(refusal) << "uid " << uid << "'s connection " << index << " got no refusal";
      EXPECT_EQ(field(*refusal, "code"), "too_many_clients");
      EXPECT_THAT(field(*refusal, "error"), HasSubstr("already has " + std::to_string(kShare) + " connections"));
      EXPECT_TRUE(tries[static_cast<std::size_t>(index)].closed_by_peer(5s));
    }
    for (int index = 0; index < kShare; ++index) idle.push_back(std::move(tries[static_cast<std::size_t>(index)]));
  }
  // max_clients is full: a fifth user is refused...
  std::vector<ControlConnection> fifth = connect_as(daemon, kFirstUid + kUids, 1);
  ASSERT_EQ(fifth.size(), 1u);
  auto full = fifth[0].read_object(5s);
  ASSERT_TRUE(full);
  EXPECT_EQ(field(*full, "code"), "too_many_clients");
  EXPECT_THAT(field(*full, "error"), HasSubstr("deskd already serves 256 clients"));
  // ...and root is served all the same, while every idle connection is still held.
  const DeskctlResult root = daemon.deskctl({"desks"});
  EXPECT_EQ(root.exit_code, 0) << describe(root);
  EXPECT_THAT(root.output, HasSubstr("one"));
  ASSERT_LT(since(crowd_started), 9s) << "too slow to tell the deadline apart";

  // Past the deadline every one of them is told why and closed.
  for (std::size_t index = 0; index < idle.size(); ++index) {
    auto told = idle[index].read_object(30s);
    ASSERT_TRUE(told) << "idle connection " << index << " was not told";
    if (index == 0) {
      EXPECT_GE(since(crowd_started), 9s) << "closed before the deadline";
    }
    EXPECT_EQ(field(*told, "code"), "idle");
    EXPECT_THAT(field(*told, "error"), HasSubstr("no complete request within 10 seconds"));
    EXPECT_TRUE(idle[index].closed_by_peer(5s)) << "idle connection " << index;
  }
  EXPECT_LT(since(crowd_started), 25s);
  EXPECT_THAT(daemon.process().error_output(), HasSubstr("that sent no complete request within 10 seconds"));

  // The places are free again: the users are served.
  std::vector<ControlConnection> back = connect_as(daemon, kFirstUid, 1);
  ASSERT_EQ(back.size(), 1u);
  auto answered = back[0].call({{"id", "back"}, {"op", "desks"}}, 10s);
  ASSERT_TRUE(answered);
  EXPECT_EQ(field(*answered, "ok"), "true");
}

// A line that never ends is no request: a client trickling bytes is closed at the deadline
// too, while a client that follows events after its request keeps its place.
TEST_F(ServeE2eTest, ATricklingClientIsClosedAtTheDeadlineAndAFollowerIsNot) {
  ServeDaemon daemon({{"one", R"({"text": "hi"})" "\n"}});
  ASSERT_NO_FATAL_FAILURE(start(daemon));
  auto follower = daemon.follow("one");
  ASSERT_TRUE(follower);
  ControlConnection trickler = daemon.connect();
  ASSERT_TRUE(trickler.connected());
  const auto started = Clock::now();
  bool closed = false;
  while (!closed && since(started) < 20s) {
    (void)trickler.send_raw("{");
    auto line = trickler.read_line(1s);
    if (line) {
      EXPECT_THAT(*line, HasSubstr("\"code\":\"idle\"")) << *line;
      closed = true;
    }
  }
  EXPECT_TRUE(closed) << "the trickling client was never closed";
  EXPECT_GE(since(started), 9s);
  EXPECT_TRUE(trickler.closed_by_peer(5s));
  // The follower, silent since its follow, is still served.
  const DeskctlResult sent = daemon.deskctl({"send", "one", "hello"});
  ASSERT_EQ(sent.exit_code, 0) << describe(sent);
  EXPECT_TRUE(follower->wait_for_event(is_event("TURN_FINISHED"), 20s));
}

}  // namespace
}  // namespace deskd::e2e
