// McpServer::serve() over real descriptors: a socket pair, a pipe, a regular file and
// /dev/null. A client thread writes lines and reads replies while the server runs on its
// own event loop, as `deskd mcp` runs it.

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <thread>

#include "runner/mcp/mcp_server.h"
#include "unit/tools/fake_tools.h"

namespace deskd::tools::testing {
namespace {

namespace json = boost::json;

// deskd ignores SIGPIPE (a client that went away is an error to handle, not a reason to
// die); the tests run the server the same way.
[[maybe_unused]] const bool kSigpipeIgnored = [] { return ::signal(SIGPIPE, SIG_IGN) != SIG_ERR; }();

// The server on its own thread and event loop, talking over `input` and `output`.
class RunningServer {
 public:
  RunningServer(UniqueFd input, UniqueFd output, std::chrono::milliseconds progress_interval = McpServer::kDefaultProgressInterval)
      : server_(registry_, McpServerInfo{}, progress_interval) {
    boost::asio::co_spawn(io_, server_.serve(io_.get_executor(), std::move(input), std::move(output)),
                          [this](std::exception_ptr escaped, bool written) {
                            escaped_ = static_cast<bool>(escaped);
                            written_ = written;
                          });
    thread_ = std::thread([this] { io_.run(); });
  }
  ~RunningServer() {
    if (thread_.joinable()) {
      boost::asio::post(io_, [this] { server_.stop(); });
      thread_.join();
    }
  }
  /// Waits for serve() to return; true when it returned true without throwing.
  bool finish() {
    thread_.join();
    return !escaped_ && written_;
  }
  void stop() {
    boost::asio::post(io_, [this] { server_.stop(); });
  }
  FakeToolLog& log() { return *log_; }

 private:
  std::shared_ptr<FakeToolLog> log_ = std::make_shared<FakeToolLog>();
  ToolRegistry registry_ = make_fake_registry(log_);
  McpServer server_;
  boost::asio::io_context io_;
  std::thread thread_;
  bool escaped_ = false;
  bool written_ = false;
};

// The client's end of a socket pair.
class Client {
 public:
  explicit Client(UniqueFd fd) : fd_(std::move(fd)) {}

  void send(std::string_view text) {
    for (std::size_t offset = 0; offset < text.size();) {
      const ssize_t written = ::write(fd_.get(), text.data() + offset, text.size() - offset);
      ASSERT_GT(written, 0);
      offset += static_cast<std::size_t>(written);
    }
  }
  void send_line(const json::value& message) { send(json::serialize(message) + "\n"); }
  void close_writing() { ::shutdown(fd_.get(), SHUT_WR); }

  /// The next line as sent; empty after `wait` without one or at end of input.
  std::string receive_raw(int wait_milliseconds = 10000) {
    for (;;) {
      if (const auto newline = buffer_.find('\n'); newline != std::string::npos) {
        const std::string line = buffer_.substr(0, newline);
        buffer_.erase(0, newline + 1);
        return line;
      }
      pollfd waiting{fd_.get(), POLLIN, 0};
      if (::poll(&waiting, 1, wait_milliseconds) <= 0) return "";
      char chunk[65536];
      const ssize_t count = ::read(fd_.get(), chunk, sizeof chunk);
      if (count <= 0) return "";
      buffer_.append(chunk, static_cast<std::size_t>(count));
    }
  }
  /// The next reply line as JSON; null after `wait` without one or at end of input.
  json::value receive(int wait_milliseconds = 10000) {
    const std::string line = receive_raw(wait_milliseconds);
    return line.empty() ? json::value(nullptr) : json::parse(line);
  }
  /// Whether the server closed its side (end of input) within 10 s, with nothing left unread.
  bool at_end() {
    pollfd waiting{fd_.get(), POLLIN, 0};
    if (::poll(&waiting, 1, 10000) <= 0) return false;
    char byte;
    return buffer_.empty() && ::read(fd_.get(), &byte, 1) == 0;
  }

 private:
  UniqueFd fd_;
  std::string buffer_;
};

json::value request(json::value id, std::string_view method, json::object params = {}) {
  return json::object{{"jsonrpc", "2.0"}, {"id", std::move(id)}, {"method", method}, {"params", std::move(params)}};
}

json::value initialize_request() { return request(0, "initialize", {{"protocolVersion", "2025-11-25"}}); }

struct Connected {
  std::unique_ptr<RunningServer> server;
  std::unique_ptr<Client> client;
};

/// A server on a socket pair; unless `initialized` is false, the session is initialized.
Connected connect(bool initialized = true,
                  std::chrono::milliseconds progress_interval = McpServer::kDefaultProgressInterval) {
  int pair[2];
  EXPECT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair), 0);
  UniqueFd server_end(pair[0]);
  UniqueFd server_output(::fcntl(pair[0], F_DUPFD_CLOEXEC, 3));
  Connected connected{std::make_unique<RunningServer>(std::move(server_end), std::move(server_output), progress_interval),
                      std::make_unique<Client>(UniqueFd(pair[1]))};
  if (initialized) {
    connected.client->send_line(initialize_request());
    EXPECT_EQ(connected.client->receive().at("id"), 0);
  }
  return connected;
}

json::value slow_call(json::value id, int milliseconds) {
  return request(std::move(id), "tools/call", {{"name", "slow"}, {"arguments", json::object{{"milliseconds", milliseconds}}}});
}

json::value cancellation(json::value id) {
  return json::object{{"jsonrpc", "2.0"},
                      {"method", "notifications/cancelled"},
                      {"params", json::object{{"requestId", std::move(id)}, {"reason", "the user changed their mind"}}}};
}

TEST(McpServeTest, AWholeSessionEndsAtEndOfInput) {
  auto [server, client] = connect(false);
  client->send_line(request(1, "initialize", {{"protocolVersion", "2025-06-18"}}));
  EXPECT_EQ(client->receive().at("result").at("protocolVersion"), "2025-06-18");
  client->send_line(json::object{{"jsonrpc", "2.0"}, {"method", "notifications/initialized"}});
  client->send_line(request(2, "tools/list"));
  EXPECT_EQ(client->receive().at("id"), 2) << "the notification must not have been answered";
  client->send_line(request(3, "tools/call", {{"name", "echo"}, {"arguments", json::object{{"text", "hi"}}}}));
  EXPECT_EQ(client->receive().at("result").at("content").at(0).at("text"), "hi");
  client->close_writing();
  EXPECT_TRUE(server->finish());
  EXPECT_TRUE(client->at_end());
}

TEST(McpServeTest, BadLinesAreAnsweredAndTheSessionGoesOn) {
  auto [server, client] = connect();
  client->send("not json\n\n   \r\n[1,2]\n{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"nope\"}\r\n");
  // Without ids, and so only because the session speaks 2025-11-25.
  EXPECT_EQ(client->receive().at("error").at("code"), -32700);
  EXPECT_EQ(client->receive().at("error").at("code"), -32600);  // blank lines are skipped
  EXPECT_EQ(client->receive().at("error").at("code"), -32601);
  client->send_line(request(2, "ping"));
  EXPECT_EQ(client->receive().at("id"), 2);
  client->close_writing();
  EXPECT_TRUE(server->finish());
}

TEST(McpServeTest, ALastLineWithoutNewlineIsAnswered) {
  auto [server, client] = connect();
  client->send(json::serialize(request(9, "ping")));
  client->close_writing();
  EXPECT_EQ(client->receive().at("id"), 9);
  EXPECT_TRUE(server->finish());
}

TEST(McpServeTest, APingIsAnsweredWhileASlowCallRuns) {
  auto [server, client] = connect();
  client->send_line(request(1, "tools/call", {{"name", "slow"}, {"arguments", json::object{{"milliseconds", 1500}}}}));
  client->send_line(request(2, "ping"));
  EXPECT_EQ(client->receive().at("id"), 2);
  EXPECT_EQ(client->receive().at("id"), 1);
}

// MCP's stdio shutdown: the client closes the server's input and waits for it to exit.
TEST(McpServeTest, EndOfAStreamStopsTheCallsUnderWayAtOnce) {
  auto [server, client] = connect();
  client->send_line(slow_call(1, 60000));
  client->send_line(slow_call(2, 60000));  // waiting behind nothing: both run
  client->send_line(request(3, "ping"));
  EXPECT_EQ(client->receive().at("id"), 3);
  const auto closed = std::chrono::steady_clock::now();
  client->close_writing();
  EXPECT_TRUE(server->finish());
  EXPECT_LT(std::chrono::steady_clock::now() - closed, std::chrono::seconds(5));
  EXPECT_TRUE(client->at_end()) << "a call stopped at the end of input gets no reply";
  EXPECT_EQ(server->log().slow_cancelled, 2);
}

// A regular file is a batch: its end is no hang-up, and every request is answered.
TEST(McpServeTest, EndOfAFileAnswersTheCallsUnderWay) {
  const std::filesystem::path folder = std::filesystem::temp_directory_path() /
                                       ("deskd-mcp-batch-" + std::to_string(::getpid()));
  std::filesystem::create_directories(folder);
  {
    std::ofstream requests(folder / "requests");
    requests << json::serialize(initialize_request()) << "\n" << json::serialize(slow_call(1, 300)) << "\n";
  }
  {
    RunningServer server(UniqueFd(::open((folder / "requests").c_str(), O_RDONLY | O_CLOEXEC)),
                         UniqueFd(::open((folder / "replies").c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0600)));
    EXPECT_TRUE(server.finish());
  }
  std::ifstream replies(folder / "replies");
  std::string first, second;
  ASSERT_TRUE(std::getline(replies, first));
  ASSERT_TRUE(std::getline(replies, second));
  EXPECT_EQ(json::parse(second).at("result").at("content").at(0).at("text"), "slept");
  std::filesystem::remove_all(folder);
}

TEST(McpServeTest, ACancelledCallIsStoppedAndGetsNoReply) {
  auto [server, client] = connect();
  client->send_line(slow_call("long", 60000));
  client->send_line(request(2, "ping"));
  EXPECT_EQ(client->receive().at("id"), 2);  // the call is under way
  client->send_line(cancellation("long"));
  client->send_line(request(3, "ping"));
  EXPECT_EQ(client->receive().at("id"), 3) << "no reply for the cancelled call may come first";
  EXPECT_TRUE(client->receive(500).is_null()) << "nor later";
  client->close_writing();
  EXPECT_TRUE(server->finish());
  EXPECT_EQ(server->log().slow_cancelled, 1);
}

TEST(McpServeTest, ACancellationForAnEndedOrUnknownRequestIsIgnored) {
  auto [server, client] = connect();
  client->send_line(slow_call(1, 1));
  EXPECT_EQ(client->receive().at("id"), 1);
  client->send_line(cancellation(1));
  client->send_line(cancellation("never sent"));
  client->send_line(json::object{{"jsonrpc", "2.0"}, {"method", "notifications/cancelled"}, {"params", json::object{}}});
  client->send_line(request(2, "ping"));
  EXPECT_EQ(client->receive().at("id"), 2);
}

// A cancellation gets through even when every slot for requests is taken: it is what frees one.
TEST(McpServeTest, ACancellationGetsThroughWhenEverySlotIsTaken) {
  auto [server, client] = connect();
  for (std::size_t id = 1; id <= McpServer::kMaximumRequestsInFlight; ++id) client->send_line(slow_call(id, 60000));
  client->send_line(request(100, "ping"));  // waits for a slot
  client->send_line(cancellation(1));
  EXPECT_EQ(client->receive().at("id"), 100);
  EXPECT_EQ(server->log().slow_cancelled, 1);
  client->close_writing();  // and the others are stopped
  EXPECT_TRUE(server->finish());
  EXPECT_EQ(server->log().slow_cancelled, static_cast<int>(McpServer::kMaximumRequestsInFlight));
}

TEST(McpServeTest, ARequestCancelledWhileWaitingForASlotNeverRuns) {
  auto [server, client] = connect();
  for (std::size_t id = 1; id <= McpServer::kMaximumRequestsInFlight; ++id) client->send_line(slow_call(id, 60000));
  client->send_line(request("waiting", "tools/call", {{"name", "echo"}, {"arguments", json::object{{"text", "x"}}}}));
  client->send_line(cancellation("waiting"));
  client->send_line(cancellation(1));  // frees a slot
  client->send_line(request(100, "ping"));
  EXPECT_EQ(client->receive().at("id"), 100) << "the cancelled echo must not have run first";
  EXPECT_EQ(server->log().calls, 0);
  client->close_writing();
  EXPECT_TRUE(server->finish());
}

TEST(McpServeTest, ProgressIsReportedWhileACallRunsWithTheTokenAsSent) {
  auto [server, client] = connect(true, std::chrono::milliseconds(100));
  client->send_line(request(5, "tools/call", {{"name", "slow"}, {"arguments", json::object{{"milliseconds", 700}}},
                                             {"_meta", json::object{{"progressToken", "tok"}}}}));
  double last = 0;
  int reports = 0;
  for (;;) {
    const json::value line = client->receive();
    ASSERT_TRUE(line.is_object());
    if (line.as_object().contains("id")) {
      EXPECT_EQ(line.at("result").at("content").at(0).at("text"), "slept");
      break;
    }
    EXPECT_EQ(line.at("method"), "notifications/progress");
    EXPECT_EQ(line.at("params").at("progressToken"), "tok");
    const double progress = line.at("params").at("progress").to_number<double>();
    EXPECT_GT(progress, last) << "progress must increase";
    last = progress;
    EXPECT_THAT(std::string(line.at("params").at("message").as_string()), ::testing::HasSubstr("slow is still running"));
    ++reports;
  }
  EXPECT_GE(reports, 3);
  // No report after the reply.
  client->send_line(request(6, "ping"));
  EXPECT_EQ(client->receive().at("id"), 6);
}

TEST(McpServeTest, ANumericProgressTokenComesBackByteForByte) {
  auto [server, client] = connect(true, std::chrono::milliseconds(50));
  client->send(R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"slow","arguments":{"milliseconds":300},)"
               R"("_meta":{"progressToken":1180591620717411303424}}})" "\n");
  // The raw line: the token must not come back as 1.1805916207174113E21.
  const std::string raw = client->receive_raw();
  EXPECT_THAT(raw, ::testing::HasSubstr(R"({"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1180591620717411303424,)"));
}

TEST(McpServeTest, CallsWithoutATokenGetNoProgress) {
  auto [server, client] = connect(true, std::chrono::milliseconds(50));
  client->send_line(slow_call(1, 300));
  EXPECT_EQ(client->receive().at("id"), 1);
}

TEST(McpServeTest, ALongSessionAnswersEveryRequestOnce) {
  auto [server, client] = connect();
  constexpr int kRequests = 2000;
  std::thread writer([&client] {
    for (int id = 0; id < kRequests; ++id) {
      if (id % 3 == 0) client->send_line(request(id, "ping"));
      else if (id % 3 == 1) client->send_line(request(id, "tools/call", {{"name", "echo"}, {"arguments", json::object{{"text", std::to_string(id)}}}}));
      else client->send_line(request(id, "tools/call", {{"name", "slow"}, {"arguments", json::object{{"milliseconds", 1}}}}));
      if (id % 100 == 0) client->send("{\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\"}\n");
    }
  });
  std::set<std::int64_t> seen;
  for (int count = 0; count < kRequests; ++count) {
    const json::value reply = client->receive();
    ASSERT_TRUE(reply.is_object()) << "reply " << count << " missing";
    const std::int64_t id = reply.at("id").as_int64();
    EXPECT_TRUE(seen.insert(id).second) << "answered twice: " << id;
    if (id % 3 == 1) {
      EXPECT_EQ(std::string(reply.at("result").at("content").at(0).at("text").as_string()), std::to_string(id));
    }
  }
  writer.join();
  client->close_writing();  // after the replies: the end of a stream stops what is under way
  EXPECT_EQ(seen.size(), static_cast<std::size_t>(kRequests));
  EXPECT_TRUE(server->finish());
  EXPECT_TRUE(client->at_end());
  EXPECT_EQ(server->log().calls, kRequests / 3 + (kRequests % 3 >= 2 ? 1 : 0));
}

TEST(McpServeTest, AnOversizedMessageIsRefusedWithoutBeingKept) {
  auto [server, client] = connect();
  std::thread writer([&client] {
    const std::string chunk(1 << 20, 'a');
    client->send("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\",\"params\":{\"x\":\"");
    for (std::size_t sent = 0; sent <= McpServer::kMaximumMessageBytes; sent += chunk.size()) client->send(chunk);
    client->send("\"}}\n");
    client->send_line(request(2, "ping"));
    client->close_writing();
  });
  const json::value refused = client->receive();
  EXPECT_EQ(refused.at("error").at("code"), -32700);
  EXPECT_FALSE(refused.as_object().contains("id"));
  EXPECT_EQ(client->receive().at("id"), 2);
  writer.join();
  EXPECT_TRUE(server->finish());
}

TEST(McpServeTest, StopEndsServingWhileWaitingForInput) {
  auto [server, client] = connect(false);
  client->send_line(request(1, "ping"));
  EXPECT_EQ(client->receive().at("id"), 1);
  server->stop();
  EXPECT_TRUE(server->finish());
}

// Requests from a file (a batch, answered whole) and replies into a pipe nobody reads.
TEST(McpServeTest, RepliesThatCannotBeWrittenEndServingWithFalse) {
  const std::filesystem::path requests = std::filesystem::temp_directory_path() /
                                         ("deskd-mcp-unread-" + std::to_string(::getpid()));
  std::ofstream(requests) << json::serialize(initialize_request()) << "\n" << json::serialize(slow_call(1, 200)) << "\n";
  int replies[2];
  ASSERT_EQ(::pipe2(replies, O_CLOEXEC), 0);
  ::close(replies[0]);  // the reader went away
  RunningServer server{UniqueFd(::open(requests.c_str(), O_RDONLY | O_CLOEXEC)), UniqueFd(replies[1])};
  EXPECT_FALSE(server.finish());
  std::filesystem::remove(requests);
}

// Requests from a regular file, replies to a regular file: epoll cannot wait on those.
TEST(McpServeTest, ServesFromAndToRegularFiles) {
  const std::filesystem::path folder = std::filesystem::temp_directory_path() /
                                       ("deskd-mcp-serve-" + std::to_string(::getpid()));
  std::filesystem::create_directories(folder);
  {
    std::ofstream requests(folder / "requests");
    requests << json::serialize(request(1, "initialize", {{"protocolVersion", "2025-11-25"}})) << "\n"
             << json::serialize(request(2, "tools/call", {{"name", "echo"}, {"arguments", json::object{{"text", "file"}}}}))
             << "\n";
  }
  {
    RunningServer server(UniqueFd(::open((folder / "requests").c_str(), O_RDONLY | O_CLOEXEC)),
                         UniqueFd(::open((folder / "replies").c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0600)));
    EXPECT_TRUE(server.finish());
  }
  std::ifstream replies(folder / "replies");
  std::string first, second;
  ASSERT_TRUE(std::getline(replies, first));
  ASSERT_TRUE(std::getline(replies, second));
  EXPECT_EQ(json::parse(first).at("id"), 1);
  EXPECT_EQ(json::parse(second).at("result").at("content").at(0).at("text"), "file");
  std::filesystem::remove_all(folder);
}

TEST(McpServeTest, DevNullInputEndsAtOnce) {
  RunningServer server(UniqueFd(::open("/dev/null", O_RDONLY | O_CLOEXEC)),
                       UniqueFd(::open("/dev/null", O_WRONLY | O_CLOEXEC)));
  EXPECT_TRUE(server.finish());
}

TEST(McpServeTest, ServesOverPipes) {
  int requests[2], replies[2];
  ASSERT_EQ(::pipe2(requests, O_CLOEXEC), 0);
  ASSERT_EQ(::pipe2(replies, O_CLOEXEC), 0);
  RunningServer server{UniqueFd(requests[0]), UniqueFd(replies[1])};
  Client reader{UniqueFd(replies[0])};
  UniqueFd writer(requests[1]);
  const std::string line = json::serialize(request("p", "ping")) + "\n";
  ASSERT_EQ(::write(writer.get(), line.data(), line.size()), static_cast<ssize_t>(line.size()));
  EXPECT_EQ(reader.receive().at("id"), "p");
  writer.reset();
  EXPECT_TRUE(server.finish());
}

}  // namespace
}  // namespace deskd::tools::testing
