// `deskd serve` under hostile clients, as processes: a client that pipelines requests and
// never reads, a send too large, one client too many, a deskd out of descriptors, requests
// during the SIGTERM grace, and a flood of refused peers in the log.

#include <grp.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <boost/json.hpp>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "e2e/daemon_fixture.h"
#include "e2e/serve_test_support.h"

namespace deskd::e2e {
namespace {

// The sanitizer build's deskd cannot be measured the same way: ASan's quarantine keeps
// freed memory (256 MB) on purpose, and UBSan's vptr check tests memory through a pipe, so
// with every descriptor taken it reports valid objects as invalid and stops deskd. The dev
// build runs these tests, and bench/daemon_memory measures the release build.
#if defined(__SANITIZE_ADDRESS__)
constexpr bool kSanitizerBuild = true;
#else
constexpr bool kSanitizerBuild = false;
#endif

namespace fs = std::filesystem;
using ::testing::HasSubstr;

// control::kReservedPrivilegedClients: the places beyond max_clients kept for root and
// deskd's own uid.
constexpr int kPlacesKeptForRoot = 4;

// A field of /proc/PID/status in bytes ("VmRSS", "VmHWM").
std::size_t memory_of(pid_t pid, const std::string& name) {
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.starts_with(name + ":")) return std::stoul(line.substr(name.size() + 1)) * 1024;
  }
  return 0;
}

// The CPU time deskd has used, user and system, in clock ticks.
long cpu_ticks(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
  std::istringstream fields(text.substr(text.rfind(')') + 2));
  std::string field;
  long user = 0, system = 0;
  for (int index = 3; fields >> field; ++index) {
    if (index == 14) user = std::stol(field);
    if (index == 15) {
      system = std::stol(field);
      break;
    }
  }
  return user + system;
}

std::size_t count_lines_with(const std::string& text, const std::string& needle) {
  std::size_t count = 0;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) count += line.find(needle) != std::string::npos;
  return count;
}

pid_t pid_of(ServeDaemon& daemon) {
  // deskd's pid: the socket's peer.
  ControlConnection connection = daemon.connect();
  ucred peer{};
  socklen_t size = sizeof peer;
  if (!connection.connected() || ::getsockopt(connection.fd(), SOL_SOCKET, SO_PEERCRED, &peer, &size) != 0) return -1;
  return peer.pid;
}

TEST_F(ServeE2eTest, AClientThatPipelinesAndNeverReadsIsDroppedAndDeskdStaysSmall) {
  if (kSanitizerBuild) GTEST_SKIP() << "ASan's quarantine holds freed memory: deskd's size is measured in the dev build";
  ServeDaemon daemon({{"one", R"({"text": "hi"})" "\n"}});
  ASSERT_NO_FATAL_FAILURE(start(daemon));
  const pid_t pid = pid_of(daemon);
  ASSERT_GT(pid, 0);
  std::ofstream("/proc/" + std::to_string(pid) + "/clear_refs") << "5";  // VmHWM from now on
  const std::size_t before = memory_of(pid, "VmRSS");

  ControlConnection flooding = daemon.connect();
  ASSERT_TRUE(flooding.connected());
  std::string requests;
  for (int index = 0; index < 300000; ++index) requests += R"({"id": )" + std::to_string(index) + R"(, "op": "status"})" "\n";
  std::thread writer([&] { (void)flooding.send_raw(requests); });  // fails once deskd stops reading
  // Meanwhile another client is answered, and soon.
  ControlConnection other = daemon.connect();
  const auto asked = Clock::now();
  auto status = other.call({{"id", "other"}, {"op", "status"}, {"desk", "one"}}, 10s);
  ASSERT_TRUE(status) << daemon.process().error_output();
  EXPECT_EQ(field(*status, "ok"), "true");
  EXPECT_LT(since(asked), 5s);
  writer.join();

  std::string last;
  while (auto line = flooding.read_line(10s)) last = *line;
  EXPECT_THAT(last, HasSubstr("\"code\":\"too_slow\"")) << last.substr(0, 300);
  EXPECT_THAT(last, HasSubstr("You read too slowly"));
  const std::size_t peak = memory_of(pid, "VmHWM");
  EXPECT_LT(peak - before, std::size_t{64} << 20) << "deskd grew from " << before << " to " << peak << " bytes";
  // Logged once, not once per reply.
  EXPECT_EQ(count_lines_with(daemon.process().error_output(), "read too slowly"), 1u) << daemon.process().error_output();
  auto again = other.call({{"id", "again"}, {"op", "desks"}});
  ASSERT_TRUE(again);
  EXPECT_EQ(field(*again, "ok"), "true");
}

TEST_F(ServeE2eTest, ASendTooLargeIsRefusedAndTheConnectionGoesOn) {
  ServeDaemon daemon({{"one", R"({"text": "hi"})" "\n"}});
  ASSERT_NO_FATAL_FAILURE(start(daemon));
  ControlConnection connection = daemon.connect();
  auto refused = connection.call({{"id", 1}, {"op", "send"}, {"desk", "one"}, {"text", std::string(300 * 1024, 'x')}});
  ASSERT_TRUE(refused);
  EXPECT_EQ(field(*refused, "ok"), "false");
  EXPECT_EQ(field(*refused, "code"), "too_large");
  EXPECT_THAT(field(*refused, "error"), HasSubstr("The message is 307200 bytes; deskd takes messages of at most 262144"));
  auto desks = connection.call({{"id", 2}, {"op", "desks"}});
  ASSERT_TRUE(desks);
  EXPECT_EQ(field(*desks, "ok"), "true");
  // Nothing of it reached the desk.
  EXPECT_THAT(file_text(daemon.journal_path("one")), ::testing::Not(HasSubstr("xxxxxxxxxx")));
}

TEST_F(ServeE2eTest, ASendIsRefusedOnceItsDeskHas64MiBOfMessagesWaiting) {
  ServeDaemon daemon({{"one", kLongTurn}});
  ASSERT_NO_FATAL_FAILURE(start(daemon));
  auto events = daemon.follow("one");
  ASSERT_TRUE(events);
  ControlConnection sender = daemon.connect();
  ASSERT_TRUE(sender.call({{"id", "first"}, {"op", "send"}, {"desk", "one"}, {"text", "start the long turn"}}));
  ASSERT_TRUE(events->wait_for_event(is_event("TOOL_CALLED")));
  // The turn runs on: every message now waits, in the steering inbox.
  const std::string text(256 * 1024, 'w');
  int accepted = 0;
  std::optional<json::object> refusal;
  for (int index = 0; index < 300 && !refusal; ++index) {
    auto reply = sender.call({{"id", index}, {"op", "send"}, {"desk", "one"}, {"text", text}});
    ASSERT_TRUE(reply);
    if (field(*reply, "ok") == "true") ++accepted;
    else refusal = *reply;
  }
  EXPECT_EQ(accepted, 256);  // 64 MiB of 256 KiB messages
  ASSERT_TRUE(refusal);
  EXPECT_EQ(field(*refusal, "code"), "refused");
  EXPECT_THAT(field(*refusal, "error"), HasSubstr("Desk 'one' already has 67108864 bytes in 256 messages waiting"));
  auto status = sender.call({{"id", "status"}, {"op", "status"}, {"desk", "one"}});
  ASSERT_TRUE(status);
  EXPECT_EQ(field(status->at("status").as_object(), "waiting_bytes"), "67108864");
  // Other requests are still answered.
  auto desks = sender.call({{"id", "desks"}, {"op", "desks"}});
  ASSERT_TRUE(desks);
  EXPECT_EQ(field(*desks, "ok"), "true");
}

// The test runs as root, or as deskd's own uid: past max_clients it still has the places
// kept for those two, and is refused only once they are taken too. (Other uids are refused
// at max_clients itself: serve_idle_clients_e2e_test.cpp.)
TEST_F(ServeE2eTest, OneClientPastMaxClientsIsRefusedWithALine) {
  ServeDaemon daemon({{"one", R"({"text": "hi"})" "\n"}}, "max_clients = 3\n");
  ASSERT_NO_FATAL_FAILURE(start(daemon));
  const int places = 3 + kPlacesKeptForRoot;
  std::vector<ControlConnection> clients;
  for (int index = 0; index < places; ++index) {
    clients.push_back(daemon.connect());
    ASSERT_TRUE(clients.back().call({{"id", index}, {"op", "desks"}}));
  }
  ControlConnection extra = daemon.connect();
  auto refusal = extra.read_object(10s);
  ASSERT_TRUE(refusal);
  EXPECT_EQ(field(*refusal, "code"), "too_many_clients");
  EXPECT_THAT(field(*refusal, "error"), HasSubstr("deskd already serves " + std::to_string(places) + " clients"));
  EXPECT_THAT(field(*refusal, "error"), HasSubstr("places kept for root and deskd's own user are taken"));
  EXPECT_TRUE(extra.closed_by_peer());
  const auto refused = daemon.deskctl({"desks"});
  EXPECT_EQ(refused.exit_code, 1) << describe(refused);
  EXPECT_THAT(refused.error_output, HasSubstr("max_clients"));

  clients.pop_back();
  const auto deadline = Clock::now() + 10s;
  DeskctlResult served;
  do {
    served = daemon.deskctl({"desks"});
  } while (served.exit_code != 0 && Clock::now() < deadline);
  EXPECT_EQ(served.exit_code, 0) << describe(served);
}

TEST_F(ServeE2eTest, OutOfDescriptorsDeskdWaitsInsteadOfSpinningAndServesAgainOnceSomeClose) {
  if (kSanitizerBuild) GTEST_SKIP() << "UBSan's vptr check needs a descriptor (a pipe) and misreports without one";
  ServeDaemon daemon({{"one", R"({"steps": [{"tool_calls": [{"name": "bash", "input": {"command": "echo fine"}}]}, {"text": "tried"}]})" "\n"}});
  ASSERT_NO_FATAL_FAILURE(start(daemon));
  const pid_t pid = pid_of(daemon);
  ASSERT_GT(pid, 0);
  // It took all the descriptors its hard limit allows.
  rlimit limit{};
  ASSERT_EQ(::prlimit(pid, RLIMIT_NOFILE, nullptr, &limit), 0);
  EXPECT_EQ(limit.rlim_cur, limit.rlim_max);
  EXPECT_THAT(daemon.process().error_output(), HasSubstr("open files:"));

  ControlConnection keeper = daemon.connect();  // served before descriptors run out
  ASSERT_TRUE(keeper.call({{"id", "k"}, {"op", "follow"}, {"desk", "one"}}));
  std::size_t open = 0;
  for ([[maybe_unused]] const auto& entry : fs::directory_iterator("/proc/" + std::to_string(pid) + "/fd")) ++open;
  limit.rlim_cur = limit.rlim_max = open + 4;
  ASSERT_EQ(::prlimit(pid, RLIMIT_NOFILE, &limit, nullptr), 0);
  std::vector<ControlConnection> crowd;
  for (int index = 0; index < 30; ++index) crowd.push_back(daemon.connect());
  std::this_thread::sleep_for(300ms);

  const long ticks_before = cpu_ticks(pid);
  std::this_thread::sleep_for(1s);
  const double cpu_seconds = static_cast<double>(cpu_ticks(pid) - ticks_before) / static_cast<double>(::sysconf(_SC_CLK_TCK));
  EXPECT_LT(cpu_seconds, 0.2) << "deskd spun while out of descriptors";
  const std::string log = daemon.process().error_output();
  EXPECT_EQ(count_lines_with(log, "accepting a control connection failed: Too many open files"), 1u) << log;

  // A bash tool that cannot start for want of descriptors is a failed tool result.
  ASSERT_TRUE(keeper.send({{"id", "s"}, {"op", "send"}, {"desk", "one"}, {"text", "run it"}}));
  auto finished = keeper.wait_for_event(is_event("TOOL_FINISHED"), 20s);
  ASSERT_TRUE(finished);
  EXPECT_EQ(field(finished->at("data").as_object(), "is_error"), "true") << json::serialize(*finished);
  EXPECT_THAT(event_data(*finished, "text"), HasSubstr("Too many open files"));

  crowd.clear();
  const auto deadline = Clock::now() + 10s;
  std::optional<json::object> answered;
  while (!answered && Clock::now() < deadline) {
    ControlConnection fresh = daemon.connect();
    if (fresh.connected()) answered = fresh.call({{"id", "fresh"}, {"op", "desks"}}, 2s);
  }
  ASSERT_TRUE(answered) << daemon.process().error_output();
  EXPECT_EQ(field(*answered, "ok"), "true");
  EXPECT_THAT(daemon.process().error_output(), HasSubstr("accepting control connections again"));
}

TEST_F(ServeE2eTest, DuringTheGraceRequestsAreAnsweredStoppingAndFollowsAreToldToTheEnd) {
  ServeDaemon daemon({{"one", kLongTurn}});
  ASSERT_NO_FATAL_FAILURE(start(daemon));
  auto events = daemon.follow("one");
  ASSERT_TRUE(events);
  const auto send = daemon.deskctl({"send", "one", "wait a while"});
  ASSERT_EQ(send.exit_code, 0) << describe(send);
  ASSERT_TRUE(events->wait_for_event(is_event("TOOL_CALLED")));
  ControlConnection open_before = daemon.connect();
  ASSERT_TRUE(open_before.call({{"id", 1}, {"op", "desks"}}));

  daemon.process().signal(SIGTERM);
  // Every event the follow gets from here on counts, also one that a busy machine (the
  // sanitizer build under ctest -j2) delivers before the notice.
  std::vector<json::object> seen;
  std::optional<json::object> notice;
  while (auto line = events->read_object(5s)) {
    if (line->contains("event")) seen.push_back(line->at("event").as_object());
    if (line->contains("stopping")) {
      notice = *line;
      break;
    }
  }
  ASSERT_TRUE(notice) << "no stopping notice for the follow";
  EXPECT_THAT(field(*notice, "notice"), HasSubstr("deskd is stopping"));
  // Within the grace of 1 s: an old connection and a new one are answered, not hung up on.
  auto refused = open_before.call({{"id", 2}, {"op", "status"}}, 5s);
  ASSERT_TRUE(refused);
  EXPECT_EQ(field(*refused, "code"), "stopping");
  EXPECT_THAT(field(*refused, "error"), HasSubstr("takes no new requests"));
  const auto late = daemon.deskctl({"send", "one", "one more"});
  EXPECT_EQ(late.exit_code, 1) << describe(late);
  EXPECT_THAT(late.error_output, HasSubstr("deskd is stopping"));

  // The follow sees the turn end and the desk stop, then its final line.
  std::optional<json::object> final_line;
  while (auto line = events->read_object(10s)) {
    if (line->contains("event")) seen.push_back(line->at("event").as_object());
    if (line->contains("ok")) final_line = *line;
  }
  EXPECT_LT(find_event(seen, is_event("TURN_STOPPED")), seen.size());
  EXPECT_LT(find_event(seen, is_event("DESK_STOPPED")), seen.size());
  ASSERT_TRUE(final_line);
  EXPECT_EQ(field(*final_line, "code"), "stopping");
  EXPECT_EQ(daemon.process().wait(), 0) << daemon.process().error_output();
}

TEST_F(ServeE2eTest, AThousandRefusedPeersMakeAFewLogLinesAndACount) {
  if (::geteuid() != 0) GTEST_SKIP() << "connecting as another uid needs root";
  ServeDaemon daemon({{"one", R"({"text": "hi"})" "\n"}});
  ASSERT_NO_FATAL_FAILURE(start(daemon));
  ::chmod(daemon.socket_path().c_str(), 0666);
  ::chmod(fs::path(daemon.socket_path()).parent_path().c_str(), 0755);
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  std::snprintf(address.sun_path, sizeof address.sun_path, "%s", daemon.socket_path().c_str());
  const pid_t child = ::fork();
  if (child == 0) {
    // Only syscalls in the child of a test process.
    if (::setgroups(0, nullptr) != 0 || ::setgid(4242) != 0 || ::setuid(4242) != 0) ::_exit(2);
    int connected = 0;
    for (int index = 0; index < 1000; ++index) {
      const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
      connected += ::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0;
      ::close(fd);
    }
    ::_exit(connected == 1000 ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "the stranger could not connect 1000 times";
  const auto desks = daemon.deskctl({"desks"});  // served, and after every refusal
  EXPECT_EQ(desks.exit_code, 0) << describe(desks);
  const auto deadline = Clock::now() + 5s;
  while (daemon.process().error_output().find("suppressed") == std::string::npos && Clock::now() < deadline) {
    std::this_thread::sleep_for(50ms);
  }
  const std::string log = daemon.process().error_output();
  const std::size_t refusals = count_lines_with(log, "refused a control connection from uid 4242");
  EXPECT_GE(refusals, 1u);
  EXPECT_LE(refusals, 15u) << log;
  EXPECT_THAT(log, ::testing::ContainsRegex("… suppressed [0-9]+ similar messages \\(refused peer\\)"));
}

}  // namespace
}  // namespace deskd::e2e
