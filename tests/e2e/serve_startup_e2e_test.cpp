// `deskd serve` starting many desks: the control socket answers from the moment it appears,
// desks not yet running say "starting" and hold what is sent to them, and systemd hears
// READY=1 with a STATUS= that counts the desks. The built binaries as processes.

#include <poll.h>
#include <sys/stat.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "e2e/daemon_fixture.h"
#include "e2e/serve_test_support.h"

namespace deskd::e2e {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

// A datagram socket standing in for systemd's NOTIFY_SOCKET.
class NotifySocket {
 public:
  explicit NotifySocket(const std::string& path) : fd_(::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0)) {
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    std::snprintf(address.sun_path, sizeof address.sun_path, "%s", path.c_str());
    bound_ = fd_ >= 0 && ::bind(fd_, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0;
  }
  ~NotifySocket() {
    if (fd_ >= 0) ::close(fd_);
  }
  bool bound() const { return bound_; }
  // The next datagram, or "(nothing)" after `timeout`.
  std::string receive(std::chrono::milliseconds timeout) {
    pollfd waiting{fd_, POLLIN, 0};
    if (::poll(&waiting, 1, static_cast<int>(timeout.count())) <= 0) return "(nothing)";
    char message[4096];
    const ssize_t size = ::recv(fd_, message, sizeof message, 0);
    return size > 0 ? std::string(message, static_cast<std::size_t>(size)) : "(nothing)";
  }
  // Datagrams until one holds `wanted` (returned), or "(nothing)" past the deadline.
  std::string receive_until(std::string_view wanted, std::chrono::milliseconds timeout) {
    const auto deadline = Clock::now() + timeout;
    while (Clock::now() < deadline) {
      std::string message = receive(std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()));
      if (message.find(wanted) != std::string::npos) return message;
    }
    return "(nothing)";
  }

 private:
  int fd_ = -1;
  bool bound_ = false;
};

std::vector<DeskSetup> many_desks(int count, const std::string& script) {
  std::vector<DeskSetup> desks;
  for (int index = 0; index < count; ++index) desks.push_back({"desk" + std::to_string(index), script});
  return desks;
}

// 300 desks start for several seconds on a 2-core machine; the socket must not wait for them.
TEST(ServeStartupE2eTest, TheSocketAnswersWithinASecondWhileThreeHundredDesksStart) {
  ServeDaemon daemon(many_desks(300, R"({"text": "hello from a desk that was starting"})" "\n"));
  NotifySocket notify(daemon.folder() + "/notify.sock");
  ASSERT_TRUE(notify.bound());
  daemon.launch({"NOTIFY_SOCKET=" + daemon.folder() + "/notify.sock"});

  const auto launched = Clock::now();
  while (!fs::exists(daemon.socket_path()) && since(launched) < 30s) std::this_thread::sleep_for(1ms);
  ASSERT_TRUE(fs::exists(daemon.socket_path())) << daemon.process().error_output();
  const auto appeared = Clock::now();
  ControlConnection connection = daemon.connect();
  ASSERT_TRUE(connection.connected());
  const auto listed = connection.call({{"op", "desks"}}, 5s);
  const auto answered_after = since(appeared);
  ASSERT_TRUE(listed.has_value()) << daemon.process().error_output();
  EXPECT_LT(answered_after, 1s) << "the socket answered " << answered_after.count() << " ms after it appeared";
  std::size_t starting = 0;
  std::string last_starting;
  const json::value* desks = listed->if_contains("desks");
  ASSERT_NE(desks, nullptr) << json::serialize(*listed);
  for (const auto& desk : desks->as_array()) {
    if (field(desk.as_object(), "state") != "starting") continue;
    ++starting;
    last_starting = field(desk.as_object(), "name");
  }
  EXPECT_EQ(desks->as_array().size(), 300U);
  // Three hundred sandboxes to try cannot all be ready before the first answer.
  ASSERT_GT(starting, 0U) << json::serialize(*listed);

  // A message to a desk still starting waits for it, and is answered once it runs.
  const DeskctlResult sent = daemon.deskctl({"send", last_starting, "are you there?"}, 120s);
  EXPECT_EQ(sent.exit_code, 0) << describe(sent);
  const std::string trigger = trimmed(sent.output);
  auto follower = daemon.follow(last_starting, true);
  ASSERT_TRUE(follower.has_value());
  EXPECT_TRUE(follower->wait_for_event(is_event("TRIGGER_FINISHED", trigger), 120s).has_value())
      << daemon.process().error_output();

  // systemd heard READY=1 as soon as the socket served, and the count once every desk ran.
  const std::string ready = notify.receive_until("READY=1", 5s);
  EXPECT_THAT(ready, HasSubstr("STATUS=starting: ")) << ready;
  const std::string serving = notify.receive_until("STATUS=300 of", 180s);
  EXPECT_THAT(serving, HasSubstr("STATUS=300 of 300 desks running")) << serving;
  for (const auto& [name, state] : daemon.desk_states()) EXPECT_EQ(state, "idle") << name;
  EXPECT_EQ(daemon.stop(60s), 0) << daemon.process().error_output();
}

// A desk that cannot start is named in STATUS= with why, and what is sent to it is refused.
TEST(ServeStartupE2eTest, StatusNamesTheDesksKeptStopped) {
  // Under a root deskd the sandbox runs as its own uid, which cannot enter a 0700 folder.
  if (::geteuid() != 0) GTEST_SKIP() << "needs a root deskd, whose sandboxes run as another uid";
  std::vector<DeskSetup> desks = many_desks(3, R"({"text": "hi"})" "\n");
  desks.push_back({"broken", R"({"text": "never"})" "\n"});
  ServeDaemon daemon(desks);
  ::chmod(daemon.desk_directory("broken").c_str(), 0700);
  NotifySocket notify(daemon.folder() + "/notify.sock");
  ASSERT_TRUE(notify.bound());
  std::string why;
  ASSERT_TRUE(daemon.start({"NOTIFY_SOCKET=" + daemon.folder() + "/notify.sock"}, &why)) << why;
  const std::string serving = notify.receive_until("STATUS=3 of", 60s);
  EXPECT_THAT(serving, HasSubstr("STATUS=3 of 4 desks running; kept stopped: broken: starting the sandbox")) << serving;
  const DeskctlResult sent = daemon.deskctl({"send", "broken", "hello?"});
  EXPECT_NE(sent.exit_code, 0) << describe(sent);
  EXPECT_THAT(sent.error_output, HasSubstr("Desk 'broken' is stopped")) << describe(sent);
  EXPECT_EQ(daemon.stop(), 0) << daemon.process().error_output();
}

// The config's state folder made a file.
void block_the_state_folder(const ServeDaemon& daemon) {
  std::ofstream(daemon.folder() + "/blocked") << "a file, not a folder\n";
  std::string config = file_text(daemon.config_path());
  const std::string written = "state_folder = \"state\"\n";
  const auto at = config.find(written);
  ASSERT_EQ(at, config.find("state_folder")) << config;
  config.replace(at, written.size(), "state_folder = \"blocked\"\n");
  std::ofstream(daemon.config_path(), std::ios::trunc) << config;
}

// A state folder that is a file: `deskd check` refuses it at its line, and `deskd serve`
// exits before READY=1 instead of serving 0 of 2 desks.
TEST(ServeStartupE2eTest, AStateFolderThatIsAFileIsRefusedByCheckAndServe) {
  ServeDaemon daemon(many_desks(2, R"({"text": "hi"})" "\n"));
  ASSERT_NO_FATAL_FAILURE(block_the_state_folder(daemon));
  const std::string refusal = daemon.config_path() + ":2:16: deskd's state folder " + daemon.folder() +
                              "/blocked is not a folder; make it a folder the user deskd runs as may write, or set "
                              "[runner] state_folder to one";
  DeskdProcess check({"check", "--config", daemon.config_path()});
  (void)check.read_rest();
  EXPECT_EQ(check.wait(), 2);
  EXPECT_THAT(check.error_output(), HasSubstr(refusal));

  NotifySocket notify(daemon.folder() + "/notify.sock");
  ASSERT_TRUE(notify.bound());
  daemon.launch({"NOTIFY_SOCKET=" + daemon.folder() + "/notify.sock"});
  EXPECT_EQ(daemon.process().wait(30s), 2) << daemon.process().error_output();
  EXPECT_THAT(daemon.process().error_output(), HasSubstr(refusal));
  EXPECT_EQ(notify.receive(200ms), "(nothing)");
  EXPECT_FALSE(fs::exists(daemon.socket_path()));
}

// An unprivileged deskd whose state folder would go in a root-owned folder.
TEST(ServeStartupE2eTest, AnUnprivilegedDeskdRefusesAStateFolderItMayNotCreate) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to hand the test's folder to another uid and keep its top";
  constexpr uid_t kUnprivilegedUid = 4243;
  ServeDaemon daemon(many_desks(2, R"({"text": "hi"})" "\n"));
  daemon.run_as(kUnprivilegedUid);
  ASSERT_EQ(::lchown(daemon.folder().c_str(), 0, 0), 0);
  const std::string refusal = daemon.config_path() + ":2:16: deskd's state folder " + daemon.folder() +
                              "/state cannot be created: uid 4243 may not write in " + daemon.folder() + ";";
  DeskdProcess check({"check", "--config", daemon.config_path()}, std::nullopt, {}, kUnprivilegedUid);
  (void)check.read_rest();
  EXPECT_EQ(check.wait(), 2);
  EXPECT_THAT(check.error_output(), HasSubstr(refusal));

  NotifySocket notify(daemon.folder() + "/notify.sock");
  ASSERT_TRUE(notify.bound());
  ASSERT_EQ(::chmod((daemon.folder() + "/notify.sock").c_str(), 0666), 0);
  daemon.launch({"NOTIFY_SOCKET=" + daemon.folder() + "/notify.sock"});
  EXPECT_EQ(daemon.process().wait(30s), 2) << daemon.process().error_output();
  EXPECT_THAT(daemon.process().error_output(), HasSubstr(refusal));
  EXPECT_EQ(notify.receive(200ms), "(nothing)");
}

// A reload and a SIGTERM that come while desks start wait for them, and lose nothing.
TEST(ServeStartupE2eTest, AReloadThenAStopWhileDesksStartAreAnsweredCleanly) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs a root deskd, whose sandboxes run as another uid";
  std::vector<DeskSetup> desks = many_desks(40, R"({"text": "hi"})" "\n");
  desks.push_back({"broken", R"({"text": "never"})" "\n"});  // restarted by the reload: its slot is replaced
  ServeDaemon daemon(desks);
  ::chmod(daemon.desk_directory("broken").c_str(), 0700);
  NotifySocket notify(daemon.folder() + "/notify.sock");
  ASSERT_TRUE(notify.bound());
  daemon.launch({"NOTIFY_SOCKET=" + daemon.folder() + "/notify.sock"});
  const auto launched = Clock::now();
  while (!fs::exists(daemon.socket_path()) && since(launched) < 30s) std::this_thread::sleep_for(1ms);
  const DeskctlResult reloaded = daemon.deskctl({"reload"}, 120s);
  // Every desk had started (or failed) before the reload planned: the broken one is tried
  // again and fails again, so deskctl reload says so and exits 1.
  EXPECT_EQ(reloaded.exit_code, 1) << describe(reloaded) << daemon.process().error_output();
  EXPECT_THAT(reloaded.output, HasSubstr("restarted  broken")) << describe(reloaded);
  EXPECT_THAT(reloaded.output, HasSubstr("failed     broken: starting the sandbox")) << describe(reloaded);
  const std::string serving = notify.receive_until("STATUS=40 of", 60s);
  EXPECT_THAT(serving, HasSubstr("STATUS=40 of 41 desks running; kept stopped: broken: starting the sandbox")) << serving;
  for (const auto& [name, state] : daemon.desk_states()) EXPECT_EQ(state, name == "broken" ? "stopped" : "idle") << name;

  // Stopped while the desks start: the ones not yet begun are not built only to be taken down.
  ServeDaemon second(many_desks(200, R"({"text": "hi"})" "\n"));
  second.launch();
  const auto second_launched = Clock::now();
  while (!fs::exists(second.socket_path()) && since(second_launched) < 30s) std::this_thread::sleep_for(1ms);
  const auto signalled = Clock::now();
  EXPECT_EQ(second.stop(60s), 0) << second.process().error_output();
  EXPECT_LT(since(signalled), 10s) << "a stop waited for every desk to start";
  EXPECT_EQ(daemon.stop(), 0) << daemon.process().error_output();
}

}  // namespace
}  // namespace deskd::e2e
