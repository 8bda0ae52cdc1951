// A real Prometheus scrapes deskd (issue 32's "Done when"): Debian's `prometheus` on
// loopback, its storage in a temporary folder, scraping `deskd serve`'s web_listen every
// second with the token deskd keeps in <state>/web.token (`authorization.credentials_file`,
// as an operator would configure it); a turn on a script-model desk; then Prometheus' HTTP
// API (GET /api/v1/query, https://prometheus.io/docs/prometheus/latest/querying/api/)
// answers deskd_turns_finished_total for the desk with the turn it ran.
//
// Until the web server exists, `deskd check` refuses web_listen and the test is skipped
// with the reason; it runs by itself once the key is known.

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <boost/json.hpp>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <thread>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "e2e/daemon_fixture.h"
#include "e2e/serve_test_support.h"
#include "e2e/turn_tools.h"

namespace deskd::e2e {
namespace {

using namespace std::chrono_literals;
constexpr const char* kPrometheusBinary = "/usr/bin/prometheus";

// A loopback port nobody listens on now (the kernel's choice; it stays free long enough).
int free_loopback_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t size = sizeof address;
  int port = -1;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &size) == 0) {
    port = ntohs(address.sin_port);
  }
  ::close(fd);
  return port;
}

// One HTTP/1.0 GET on loopback: the body, or nullopt when nothing answered within `timeout`.
std::optional<std::string> http_get(int port, const std::string& target, std::chrono::milliseconds timeout = 5s) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = htons(static_cast<std::uint16_t>(port));
  if (::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
    ::close(fd);
    return std::nullopt;
  }
  const std::string request = "GET " + target + " HTTP/1.0\r\nHost: 127.0.0.1:" + std::to_string(port) + "\r\n\r\n";
  if (::send(fd, request.data(), request.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(request.size())) {
    ::close(fd);
    return std::nullopt;
  }
  std::string response;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    pollfd readable{fd, POLLIN, 0};
    if (left.count() <= 0 || ::poll(&readable, 1, static_cast<int>(left.count())) <= 0) break;
    char buffer[8192];
    const ssize_t count = ::read(fd, buffer, sizeof buffer);
    if (count <= 0) break;
    response.append(buffer, static_cast<std::size_t>(count));
  }
  ::close(fd);
  const std::size_t body = response.find("\r\n\r\n");
  if (body == std::string::npos) return std::nullopt;
  return response.substr(body + 4);
}

// Debian's prometheus, on loopback, its storage and log in `folder`; killed with the object.
class PrometheusProcess {
 public:
  PrometheusProcess(const std::string& folder, const std::string& config, int port) : port_(port) {
    const std::string log = folder + "/prometheus.log";
    const std::vector<std::string> arguments = {
        kPrometheusBinary, "--config.file=" + config, "--storage.tsdb.path=" + folder + "/data",
        "--web.listen-address=127.0.0.1:" + std::to_string(port), "--log.level=warn"};
    pid_ = ::fork();
    if (pid_ == 0) {
      const int output = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
      ::dup2(output, 1);
      ::dup2(output, 2);
      std::vector<char*> argv;
      for (const auto& argument : arguments) argv.push_back(const_cast<char*>(argument.c_str()));
      argv.push_back(nullptr);
      ::execv(kPrometheusBinary, argv.data());
      ::_exit(127);
    }
  }
  ~PrometheusProcess() {
    if (pid_ <= 0) return;
    ::kill(pid_, SIGTERM);
    for (int waited = 0; waited < 100; ++waited) {
      if (::waitpid(pid_, nullptr, WNOHANG) == pid_) return;
      std::this_thread::sleep_for(50ms);
    }
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
  }
  PrometheusProcess(const PrometheusProcess&) = delete;
  PrometheusProcess& operator=(const PrometheusProcess&) = delete;

  bool started() const { return pid_ > 0; }
  /// The value of the first sample `query` returns now, as text; nullopt when none.
  std::optional<std::string> instant_value(const std::string& encoded_query) const {
    const auto body = http_get(port_, "/api/v1/query?query=" + encoded_query);
    if (!body) return std::nullopt;
    boost::system::error_code error;
    const boost::json::value reply = boost::json::parse(*body, error);
    if (error || !reply.is_object()) return std::nullopt;
    const auto* data = reply.as_object().if_contains("data");
    if (data == nullptr || !data->is_object()) return std::nullopt;
    const auto* result = data->as_object().if_contains("result");
    if (result == nullptr || !result->is_array() || result->as_array().empty()) return std::nullopt;
    const auto& value = result->as_array().front().as_object().at("value").as_array();
    return std::string(value.at(1).as_string());
  }
  /// The scrape targets as Prometheus reports them (for a failure's message).
  std::string targets() const { return http_get(port_, "/api/v1/targets").value_or("(no answer)"); }

 private:
  int port_;
  pid_t pid_ = -1;
};

class PrometheusE2eTest : public ServeE2eTest {};

TEST_F(PrometheusE2eTest, PrometheusScrapesTheTurnsADeskRan) {
  if (::access(kPrometheusBinary, X_OK) != 0) {
    GTEST_SKIP() << "Debian's prometheus is missing: run scripts/setup test";
  }
  const int web_port = free_loopback_port();
  ASSERT_GT(web_port, 0);
  ServeDaemon daemon({{"nifty", scripted_turn({bash_call("echo scraped")})}},
                     "web_listen = \"127.0.0.1:" + std::to_string(web_port) + "\"\n");
  {
    DeskdProcess check({"check", "--config", daemon.config_path()});
    const int status = check.wait();
    ASSERT_EQ(status, 0) << check.error_output();
  }
  start(daemon);
  const std::string token_file = daemon.folder() + "/state/web.token";
  ASSERT_TRUE(std::filesystem::exists(token_file)) << "deskd made no " << token_file;

  const std::string prometheus_folder = daemon.folder() + "/prometheus";
  std::filesystem::create_directories(prometheus_folder);
  const std::string config = prometheus_folder + "/prometheus.yml";
  {
    std::ofstream yaml(config);
    yaml << "global:\n"
            "  scrape_interval: 1s\n"
            "  scrape_timeout: 1s\n"
            "scrape_configs:\n"
            "  - job_name: deskd\n"
            "    metrics_path: /metrics\n"
            "    authorization:\n"
            "      type: Bearer\n"
            "      credentials_file: "
         << token_file
         << "\n"
            "    static_configs:\n"
            "      - targets: ['127.0.0.1:"
         << web_port << "']\n";
  }
  const int prometheus_port = free_loopback_port();
  PrometheusProcess prometheus(prometheus_folder, config, prometheus_port);
  ASSERT_TRUE(prometheus.started());

  const DeskctlResult asked = daemon.deskctl({"ask", "nifty", "be counted"});
  ASSERT_EQ(asked.exit_code, 0) << describe(asked);

  // deskd_turns_finished_total{desk="nifty"}, URL-encoded. Prometheus scrapes each second:
  // the turn shows within a few scrapes of its end (and of Prometheus' start).
  const std::string query = "deskd_turns_finished_total%7Bdesk%3D%22nifty%22%7D";
  std::optional<std::string> finished;
  const auto deadline = std::chrono::steady_clock::now() + 30s;
  while (std::chrono::steady_clock::now() < deadline) {
    finished = prometheus.instant_value(query);
    if (finished == "1") break;
    std::this_thread::sleep_for(250ms);
  }
  EXPECT_EQ(finished.value_or("(none)"), "1") << "Prometheus' targets: " << prometheus.targets()
                                              << "\nits log: " << file_text(prometheus_folder + "/prometheus.log");
  EXPECT_EQ(prometheus.instant_value("deskd_turns_started_total%7Bdesk%3D%22nifty%22%7D").value_or("(none)"), "1");
  EXPECT_EQ(prometheus.instant_value("up%7Bjob%3D%22deskd%22%7D").value_or("(none)"), "1");
}

}  // namespace
}  // namespace deskd::e2e
