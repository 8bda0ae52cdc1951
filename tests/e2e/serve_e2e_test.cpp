// `deskd serve` and `deskctl` as processes: a config with desks on script models, the
// control socket driven by deskctl and by raw JSON lines, asserting on what a user sees —
// exit statuses, printed replies, events, journal lines and files on disk.

#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <signal.h>
#include <linux/sockios.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <boost/json.hpp>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <latch>
#include <map>
#include <sstream>
#include <thread>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "e2e/daemon_fixture.h"
#include "e2e/serve_test_support.h"

namespace deskd::e2e {
namespace {

namespace fs = std::filesystem;
using ::testing::ContainsRegex;
using ::testing::HasSubstr;
using ::testing::MatchesRegex;
using ::testing::Not;

// --- deskd check ---

TEST_F(ServeE2eTest, CheckPrintsEveryProblemWithFileLineAndColumnAndExits2) {
  ServeDaemon daemon({{"one", R"({"text": "hi"})" "\n"}});
  {
    DeskdProcess check({"check", "--config", daemon.config_path()});
    const std::string output = check.read_rest();
    EXPECT_EQ(check.wait(), 0) << output << check.error_output();
    EXPECT_THAT(output, HasSubstr("ok, 1 desk(s): one"));
  }
  const std::string bad = daemon.folder() + "/bad.toml";
  std::ofstream(bad) << "[runner]\n"                       // 1
                        "state_folder = \"state\"\n"       // 2
                        "socket = \"state/deskd.sock\"\n"  // 3
                        "\n"                               // 4
                        "[[desk]]\n"                       // 5
                        "nmae = \"one\"\n"                 // 6
                        "directory = \"desks/one\"\n"      // 7
                        "\n"                               // 8
                        "[[desk]]\n"                       // 9
                        "name = \"two\"\n"                 // 10
                        "directory = \"no-such-folder\"\n" // 11
                        "\n"                               // 12
                        "[[desk.schedule]]\n"              // 13
                        "name = \"s\"\n"                   // 14
                        "time = \"25:61\"\n"               // 15
                        "text = \"x\"\n";                  // 16
  DeskdProcess check({"check", "--config", bad});
  const std::string output = check.read_rest();
  EXPECT_EQ(check.wait(), 2);
  const std::string problems = check.error_output();
  EXPECT_THAT(output, Not(HasSubstr("ok")));
  EXPECT_THAT(problems, HasSubstr(bad + ":5:1: [[desk]] needs a 'name'"));
  EXPECT_THAT(problems, HasSubstr(bad + ":6:1: unknown key 'nmae'"));
  EXPECT_THAT(problems, HasSubstr(bad + ":11:13: the desk folder"));
  EXPECT_THAT(problems, HasSubstr(bad + ":15:8: 'time' must be"));
  std::istringstream lines(problems);
  for (std::string line; std::getline(lines, line);) {
    EXPECT_THAT(line, MatchesRegex(bad + ":[0-9]+:[0-9]+: .+")) << problems;
  }
}

// --- turns through deskctl ---

// Kubernetes ignores hostUsers: false on a runtime without user namespaces; a config that
// counts on one says so, and deskd on the host's namespace does not start.
TEST_F(ServeE2eTest, RequireUserNamespaceRefusesToServeInTheHostsOwn) {
  ServeDaemon daemon({{"one", R"({"text": "hi"})" "\n"}}, "require_user_namespace = true\n");
  DeskdProcess serve({"serve", "--config", daemon.config_path()});
  (void)serve.read_rest();
  EXPECT_EQ(serve.wait(), 1);
  EXPECT_THAT(serve.error_output(), HasSubstr("require_user_namespace = true, but deskd runs in the host's user "
                                              "namespace (uid_map 0 0 4294967295)"));
}

TEST_F(ServeE2eTest, AskPrintsTheModelTextAndToolOutputAndSendPrintsATriggerId) {
  ServeDaemon daemon({{"one",
                       R"json({"steps": [{"text": "let me look", "tool_calls": [{"name": "bash", "input": {"command": "echo tool-output-$((6*7))"}}]}, {"text": "all done"}]})json" "\n"
                       R"({"text": "second answer"})" "\n"}});
  ASSERT_NO_FATAL_FAILURE(start(daemon));
  const auto ask = daemon.deskctl({"ask", "one", "look around"});
  EXPECT_EQ(ask.exit_code, 0) << describe(ask);
  EXPECT_THAT(ask.output, HasSubstr("let me look"));
  EXPECT_THAT(ask.output, HasSubstr("> bash echo tool-output-$((6*7))"));
  EXPECT_THAT(ask.output, HasSubstr("tool-output-42"));
  EXPECT_THAT(ask.output, HasSubstr("turn finished: all done"));

  const auto send = daemon.deskctl({"send", "one", "and again"});
  EXPECT_EQ(send.exit_code, 0) << describe(send);
  EXPECT_THAT(send.output, MatchesRegex("t-[0-9a-f]+\n"));
}

// A desk that could talk to deskd's socket could accept its own proposals, and one that
// could write the state folder could forge them: both are hidden from every desk.
TEST_F(ServeE2eTest, ADeskCannotReachTheControlSocketOrTheStateFolder) {
  const std::string probe =
      "import socket, os\n"
      "for path in ['../../state/deskd.sock', os.path.realpath('../../state/deskd.sock')]:\n"
      "    try:\n"
      "        s = socket.socket(socket.AF_UNIX)\n"  // refused by seccomp now, before connect
      "        s.connect(path); s.sendall(b'{\"op\":\"desks\",\"id\":1}\\n'); print('socket: CONNECTED', s.recv(100))\n"
      "    except OSError as e:\n"
      "        print('socket refused:', e.strerror)\n"
      "for path in ['../../state', '../../state/desks/one/proposals']:\n"
      "    try:\n"
      "        print('listed:', os.listdir(path))\n"
      "    except OSError as e:\n"
      "        print('state refused:', e.strerror)\n"
      "try:\n"
      "    open('../../state/desks/one/proposals/p-000000000001.json', 'w').write('{}'); print('FORGED')\n"
      "except OSError as e:\n"
      "    print('forge refused:', e.strerror)\n";
  const json::object step{{"tool_calls", json::array{json::object{
                                             {"name", "bash"},
                                             {"input", json::object{{"command", "python3 - <<'EOF'\n" + probe + "EOF"}}}}}}};
  const json::object turn{{"steps", json::array{step, json::object{{"text", "probed"}}}}};
  ServeDaemon daemon({{"one", json::serialize(turn) + "\n"}});
  ASSERT_NO_FATAL_FAILURE(start(daemon));
  const auto ask = daemon.deskctl({"ask", "one", "probe"});
  EXPECT_EQ(ask.exit_code, 0) << describe(ask);
  EXPECT_THAT(ask.output, HasSubstr("socket refused:"));
  EXPECT_THAT(ask.output, HasSubstr("state refused:"));
  EXPECT_THAT(ask.output, HasSubstr("forge refused:"));
  EXPECT_THAT(ask.output, Not(HasSubstr("CONNECTED")));
  EXPECT_THAT(ask.output, Not(HasSubstr("listed:")));
  EXPECT_THAT(ask.output, Not(HasSubstr("FORGED")));
  EXPECT_FALSE(std::filesystem::exists(daemon.folder() + "/state/desks/one/proposals/p-000000000001.json"));
}

TEST_F(ServeE2eTest, StatusIsAnsweredWhileATurnRuns) {
  ServeDaemon daemon({{"one", kLongTurn}});
  ASSERT_NO_FATAL_FAILURE(start(daemon));
  auto events = daemon.follow("one");
  ASSERT_TRUE(events);
  const auto send = daemon.deskctl({"send", "one", "wait a while"});
  ASSERT_EQ(send.exit_code, 0) << describe(send);
  ASSERT_TRUE(events->wait_for_event(is_event("TOOL_CALLED")));

  const auto status = daemon.deskctl({"ask", "one", "/status"}, 20s);
  EXPECT_EQ(status.exit_code, 0) << describe(status);
  EXPECT_LT(status.elapsed, 5s);
  EXPECT_THAT(status.output, HasSubstr("/status:"));
  EXPECT_THAT(status.output, HasSubstr("running a turn for"));

  const auto json_status = daemon.deskctl({"--json", "status", "one"}, 20s);
  EXPECT_EQ(json_status.exit_code, 0) << describe(json_status);
  EXPECT_EQ(field(parsed(json_status.output)["status"].as_object(), "state"), "running") << json_status.output;
}

TEST_F(ServeE2eTest, StopEndsTheRunningTurnAtOnceAndItsAskExits1) {
  ServeDaemon daemon({{"one", kLongTurn}});
  ASSERT_NO_FATAL_FAILURE(start(daemon));
  auto events = daemon.follow("one");
  ASSERT_TRUE(events);
  auto ask = daemon.deskctl_in_background({"ask", "one", "wait a while"});
  const auto started = events->wait_for_event(is_event("TURN_STARTED"));
  ASSERT_TRUE(started);
  const std::string trigger = event_data(*started, "trigger");
  ASSERT_TRUE(events->wait_for_event(is_event("TOOL_CALLED")));

  const auto stop_sent = Clock::now();
  const auto stop = daemon.deskctl({"send", "one", "/stop"});
  EXPECT_EQ(stop.exit_code, 0) << describe(stop);
  const auto stopped = events->wait_for_event(is_event("TURN_STOPPED", trigger), 20s);
  ASSERT_TRUE(stopped) << "no TURN_STOPPED for " << trigger;
  EXPECT_LT(since(stop_sent), 3s);
  EXPECT_EQ(event_data(*stopped, "reason"), "/stop");

  const auto result = ask->finish(20s);
  EXPECT_EQ(result.exit_code, 1) << describe(result);
  EXPECT_THAT(result.output, HasSubstr("turn stopped (/stop)"));
}

TEST_F(ServeE2eTest, AMessageSentDuringAToolLandsInTheTurnAtItsNextToolRound) {
  ServeDaemon daemon({{"one",
                       R"({"steps": [{"text": "working", "tool_calls": [{"name": "bash", "input": {"command": "sleep 3; echo slept"}}]}, {"tool_calls": [{"name": "bash", "input": {"command": "echo second-round"}}]}, {"text": "done"}]})" "\n"}});
  ASSERT_NO_FATAL_FAILURE(start(daemon));
  auto events = daemon.follow("one");
  ASSERT_TRUE(events);
  auto ask = daemon.deskctl_in_background({"ask", "one", "start working"});
  std::vector<json::object> seen;
  const auto started = events->wait_for_event(is_event("TURN_STARTED"), 30s, &seen);
  ASSERT_TRUE(started);
  const std::string turn_trigger = event_data(*started, "trigger");
  ASSERT_TRUE(events->wait_for_event(is_event("TOOL_CALLED"), 30s, &seen));

  const auto steer = daemon.deskctl({"send", "one", "also check the steering"});
  ASSERT_EQ(steer.exit_code, 0) << describe(steer);
  const std::string steering = trimmed(steer.output);
  ASSERT_TRUE(events->wait_for_event(is_event("TURN_FINISHED", turn_trigger), 30s, &seen));

  const std::size_t queued = find_event(seen, is_event("STEERING_QUEUED", steering));
  const std::size_t delivered = find_event(seen, is_event("STEERING_DELIVERED", steering));
  ASSERT_LT(queued, seen.size()) << "no STEERING_QUEUED for " << steering;
  ASSERT_LT(delivered, seen.size()) << "no STEERING_DELIVERED for " << steering;
  EXPECT_LT(queued, delivered);
  // Delivered at the end of the first tool round after it was queued: a tool finished,
  // and nothing else happened in the turn between that and the delivery.
  const std::size_t round_end = find_event(seen, is_event("TOOL_FINISHED"), queued);
  EXPECT_LT(round_end, delivered);
  for (std::size_t index = round_end + 1; index < delivered && index < seen.size(); ++index) {
    EXPECT_NE(event_kind(seen[index]), "TOOL_CALLED");
    EXPECT_NE(event_kind(seen[index]), "MODEL_TEXT");
  }
  // The message was not a turn of its own.
  EXPECT_EQ(find_event(seen, is_event("TURN_STARTED", steering)), seen.size());

  const auto result = ask->finish(20s);
  EXPECT_EQ(result.exit_code, 0) << describe(result);
  EXPECT_THAT(result.output, HasSubstr("message delivered to the running turn"));
  EXPECT_THAT(result.output, HasSubstr("second-round"));
  EXPECT_THAT(result.output, HasSubstr("turn finished: done"));

  // The model's next request carried it, beside the tool result: the session has it.
  const auto steering_in_session = [&] {
    const auto session = parsed(file_text(daemon.session_path("one")));
    const json::value* transcript = session.if_contains("transcript");
    if (transcript == nullptr || !transcript->is_array()) return false;
    for (const auto& message : transcript->as_array()) {
      const std::string text = json::serialize(message);
      if (text.find("tool_result") != std::string::npos &&
          text.find("while you worked: also check the steering") != std::string::npos) {
        return true;
      }
    }
    return false;
  };
  const auto deadline = Clock::now() + 10s;
  while (!steering_in_session() && Clock::now() < deadline) std::this_thread::sleep_for(50ms);
  EXPECT_TRUE(steering_in_session()) << file_text(daemon.session_path("one"));
}

TEST_F(ServeE2eTest, BtwIsAnsweredBesideTheRunningTurn) {
  ServeDaemon daemon({{"one", kLongTurn}});
  ASSERT_NO_FATAL_FAILURE(start(daemon));
  auto events = daemon.follow("one");
  ASSERT_TRUE(events);
  const auto send = daemon.deskctl({"send", "one", "wait a while"});
  ASSERT_EQ(send.exit_code, 0) << describe(send);
  const std::string turn = trimmed(send.output);
  ASSERT_TRUE(events->wait_for_event(is_event("TOOL_CALLED")));

  const auto btw = daemon.deskctl({"ask", "one", "/btw", "what is the lot size?"}, 20s);
  EXPECT_EQ(btw.exit_code, 0) << describe(btw);
  EXPECT_LT(btw.elapsed, 5s);
  EXPECT_THAT(btw.output, HasSubstr("/btw:"));
  EXPECT_THAT(btw.output, HasSubstr("The script model has no answer to side questions."));

  // The turn goes on.
  const auto status = daemon.deskctl({"--json", "status", "one"});
  EXPECT_EQ(field(parsed(status.output)["status"].as_object(), "state"), "running") << status.output;
  const auto events_so_far = daemon.deskctl({"--json", "events", "one"});
  EXPECT_THAT(events_so_far.output, Not(HasSubstr("TURN_STOPPED")));
  EXPECT_THAT(events_so_far.output, Not(ContainsRegex("TURN_FINISHED.*" + turn)));
}

// --- the socket's protocol ---

TEST_F(ServeE2eTest, BadRequestsAreAnsweredWithErrorsAndTheConnectionGoesOn) {
  ServeDaemon daemon({{"one", R"({"text": "hi"})" "\n"}});
  ASSERT_NO_FATAL_FAILURE(start(daemon));
  const auto nope = daemon.deskctl({"send", "nope", "x"});
  EXPECT_EQ(nope.exit_code, 1) << describe(nope);
  EXPECT_THAT(nope.error_output, HasSubstr("'nope'"));

  ControlConnection connection = daemon.connect();
  ASSERT_TRUE(connection.connected());
  ASSERT_TRUE(connection.send_raw("{\"id\": 1, \"op\": \n"));
  auto malformed = connection.read_object();
  ASSERT_TRUE(malformed);
  EXPECT_EQ(field(*malformed, "ok"), "false");
  EXPECT_EQ(field(*malformed, "code"), "bad_request");

  const auto expect_error = [&](json::object request, const std::string& code) {
    auto reply = connection.call(request);
    ASSERT_TRUE(reply) << json::serialize(request);
    EXPECT_EQ(field(*reply, "ok"), "false") << json::serialize(*reply);
    EXPECT_EQ(field(*reply, "code"), code) << json::serialize(*reply);
    EXPECT_FALSE(field(*reply, "error").empty());
  };
  expect_error({{"id", 2}, {"op", "launch"}}, "unknown_operation");
  expect_error({{"id", 3}, {"op", "send"}, {"desk", "one"}}, "bad_request");
  expect_error({{"id", 4}, {"op", "send"}, {"text", "hello"}}, "bad_request");
  expect_error({{"id", 5}, {"op", "accept"}}, "bad_request");
  expect_error({{"id", 6}}, "bad_request");
  expect_error({{"id", 7}, {"op", "send"}, {"desk", "nope"}, {"text", "hello"}}, "unknown_desk");
  ASSERT_TRUE(connection.send_raw("[1, 2, 3]\n"));
  auto not_object = connection.read_object();
  ASSERT_TRUE(not_object);
  EXPECT_EQ(field(*not_object, "code"), "bad_request");

  auto desks = connection.call({{"id", 8}, {"op", "desks"}});
  ASSERT_TRUE(desks);
  EXPECT_EQ(field(*desks, "ok"), "true") << json::serialize(*desks);
  EXPECT_EQ((*desks)["desks"].as_array().size(), 1u);

  // A line past 1 MiB: one error, then deskd hangs up (it may do so before reading it all).
  ControlConnection flooding = daemon.connect();
  ASSERT_TRUE(flooding.connected());
  (void)flooding.send_raw(std::string((std::size_t{1} << 20) + 128 * 1024, 'x'));
  auto too_long = flooding.read_object(10s);
  ASSERT_TRUE(too_long);
  EXPECT_EQ(field(*too_long, "code"), "too_long");
  EXPECT_TRUE(flooding.closed_by_peer());
  // Also when the line's end comes in the same read as the bytes past the limit: a good
  // request padded with spaces to exactly 1 MiB, read by deskd to its last byte, then
  // 1000 more spaces and the newline in one write, is refused, not answered.
  ControlConnection padded = daemon.connect();
  ASSERT_TRUE(padded.connected());
  std::string padded_request = R"({"id": 10, "op": "desks"})";
  padded_request.resize(std::size_t{1} << 20, ' ');
  ASSERT_TRUE(padded.send_raw(padded_request));
  const auto read_deadline = Clock::now() + 10s;
  int unread_by_deskd = 1;
  while (Clock::now() < read_deadline && ::ioctl(padded.fd(), SIOCOUTQ, &unread_by_deskd) == 0 && unread_by_deskd > 0) {
    std::this_thread::sleep_for(5ms);
  }
  ASSERT_EQ(unread_by_deskd, 0) << "deskd did not read the first 1 MiB";
  (void)padded.send_raw(std::string(1000, ' ') + "\n");
  auto padded_reply = padded.read_object(10s);
  ASSERT_TRUE(padded_reply);
  EXPECT_EQ(field(*padded_reply, "code"), "too_long") << json::serialize(*padded_reply).substr(0, 200);
  EXPECT_TRUE(padded.closed_by_peer());
  // deskd itself goes on.
  auto after = connection.call({{"id", 9}, {"op", "desks"}});
  ASSERT_TRUE(after);
  EXPECT_EQ(field(*after, "ok"), "true");
}

// What uid `uid` reads from `socket_path` after connecting and writing `request`: its
// first line, then "closed" or "open" (whether deskd hung up within `close_wait`).
std::string as_other_user(const std::string& socket_path, uid_t uid, const std::string& request,
                          std::chrono::milliseconds close_wait) {
  int report[2];
  if (::pipe2(report, O_CLOEXEC) != 0) return "pipe failed";
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  std::snprintf(address.sun_path, sizeof address.sun_path, "%s", socket_path.c_str());
  const pid_t child = ::fork();
  if (child == 0) {
    // Only syscalls from here: the child of a test process reports through the pipe.
    const auto say = [&](const char* text, std::size_t size) { (void)!::write(report[1], text, size); };
    if (::setgroups(0, nullptr) != 0 || ::setgid(uid) != 0 || ::setuid(uid) != 0) {
      say("cannot change uid\n", 18);
      ::_exit(1);
    }
    const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
      say("cannot connect\n", 15);
      ::_exit(1);
    }
    (void)::send(fd, request.data(), request.size(), MSG_NOSIGNAL);
    char line[4096];
    std::size_t size = 0;
    bool newline = false;
    bool closed = false;
    pollfd waiting{fd, POLLIN, 0};
    while (!newline && size < sizeof line && ::poll(&waiting, 1, 20000) > 0) {
      const ssize_t count = ::recv(fd, line + size, sizeof line - size, 0);
      if (count <= 0) {
        closed = true;
        break;
      }
      for (ssize_t index = 0; index < count && !newline; ++index) {
        if (line[size + static_cast<std::size_t>(index)] == '\n') {
          newline = true;
          size += static_cast<std::size_t>(index) + 1;
        }
      }
      if (!newline) size += static_cast<std::size_t>(count);
    }
    say(line, size);
    if (!newline) say("\n", 1);
    char rest[4096];
    while (!closed && ::poll(&waiting, 1, static_cast<int>(close_wait.count())) > 0) {
      if (::recv(fd, rest, sizeof rest, 0) <= 0) closed = true;
    }
    say(closed ? "closed" : "open", closed ? 6 : 4);
    ::_exit(0);
  }
  ::close(report[1]);
  std::string text;
  pollfd waiting{report[0], POLLIN, 0};
  char chunk[4096];
  while (::poll(&waiting, 1, 40000) > 0) {
    const ssize_t count = ::read(report[0], chunk, sizeof chunk);
    if (count <= 0) break;
    text.append(chunk, static_cast<std::size_t>(count));
  }
  ::close(report[0]);
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);
  return text;
}

TEST_F(ServeE2eTest, APeerWhoseUidIsNotAllowedIsRefusedAndDisconnected) {
  if (::geteuid() != 0) GTEST_SKIP() << "connecting as another uid needs root";
  constexpr uid_t kStranger = 4242;
  const std::string request = "{\"id\": 1, \"op\": \"desks\"}\n";
  // Opens the socket and its folder to everyone, so that only deskd's own check stands
  // between uid 4242 and the desks.
  const auto open_up = [](const ServeDaemon& daemon) {
    ::chmod(daemon.socket_path().c_str(), 0666);
    ::chmod(fs::path(daemon.socket_path()).parent_path().c_str(), 0755);
  };
  {
    ServeDaemon daemon({{"one", R"({"text": "hi"})" "\n"}});
    ASSERT_NO_FATAL_FAILURE(start(daemon));
    open_up(daemon);
    const std::string seen = as_other_user(daemon.socket_path(), kStranger, request, 10s);
    const std::string first_line = seen.substr(0, seen.find('\n'));
    const auto reply = parsed(first_line);
    EXPECT_EQ(field(reply, "ok"), "false") << seen;
    EXPECT_EQ(field(reply, "code"), "not_allowed") << seen;
    EXPECT_THAT(seen, testing::EndsWith("\nclosed"));
    // Root and deskd's own uid still get in.
    const auto desks = daemon.deskctl({"desks"});
    EXPECT_EQ(desks.exit_code, 0) << describe(desks);
  }
  ServeDaemon daemon({{"one", R"({"text": "hi"})" "\n"}}, "allowed_uids = [4242]\n");
  ASSERT_NO_FATAL_FAILURE(start(daemon));
  open_up(daemon);
  const std::string seen = as_other_user(daemon.socket_path(), kStranger, request, 500ms);
  const auto reply = parsed(seen.substr(0, seen.find('\n')));
  EXPECT_EQ(field(reply, "ok"), "true") << seen;
  ASSERT_TRUE(reply.contains("desks")) << seen;
  EXPECT_EQ(field(reply.at("desks").as_array().at(0).as_object(), "name"), "one");
  EXPECT_THAT(seen, testing::EndsWith("\nopen"));
}

}  // namespace
}  // namespace deskd::e2e
