#include "e2e/fake_broker.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <boost/json.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "e2e/daemon_fixture.h"

namespace deskd::e2e {
namespace {

namespace fs = std::filesystem;

// A CA and broker.test's certificate (P-256: quick to make), as tests/e2e/small_internet/up.sh
// makes the small internet's.
std::string make_certificates(const std::string& folder) {
  const std::string quiet = " 2>>" + folder + "/openssl.log";
  const std::string commands =
      "cd " + folder + " && " +
      "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 "
      "-subj '/CN=deskd fake broker CA' -keyout ca.key -out ca.pem" +
      quiet + " && " +
      "openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -subj /CN=broker.test "
      "-keyout server.key -out server.csr" +
      quiet + " && " + "printf 'subjectAltName=DNS:broker.test\\n' > san.ext && " +
      "openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 2 -extfile san.ext "
      "-out server.pem" +
      quiet + " && chmod 644 ca.pem";
  if (std::system(commands.c_str()) != 0) return "openssl failed:\n" + file_text(folder + "/openssl.log");
  return "";
}

// The next line the broker prints, within 10 s ("" when none came).
std::string read_line(int fd) {
  std::string line;
  char each = 0;
  while (line.empty() || line.back() != '\n') {
    pollfd ready{fd, POLLIN, 0};
    if (::poll(&ready, 1, 10'000) <= 0 || ::read(fd, &each, 1) != 1) return "";
    line += each;
  }
  line.pop_back();
  return line;
}

}  // namespace

FakeBroker::FakeBroker(std::string authorization) : authorization_(std::move(authorization)) {
  std::string pattern = "/var/tmp/deskd-broker-XXXXXX";
  if (::mkdtemp(pattern.data()) == nullptr) {
    why_ = "mkdtemp failed";
    return;
  }
  folder_ = pattern;
  ::chmod(folder_.c_str(), 0755);  // an unprivileged deskd reads ca.pem
  why_ = make_certificates(folder_);
  if (!why_.empty()) return;
  int output[2];
  if (::pipe2(output, O_CLOEXEC) != 0) {
    why_ = "pipe failed";
    return;
  }
  std::vector<std::string> arguments = {"python3",
                                        DESKD_FAKE_BROKER,
                                        "--port",
                                        "0",
                                        "--http-port",
                                        "0",
                                        "--cert",
                                        folder_ + "/server.pem",
                                        "--key",
                                        folder_ + "/server.key",
                                        "--log",
                                        log_path(),
                                        "--expect-authorization",
                                        authorization_};
  std::vector<char*> argv;
  for (auto& argument : arguments) argv.push_back(argument.data());
  argv.push_back(nullptr);
  const std::string error_path = folder_ + "/broker.stderr";
  const int error_fd = ::open(error_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  pid_ = ::fork();
  if (pid_ == 0) {
    ::dup2(output[1], 1);
    ::dup2(error_fd, 2);
    ::execvp(argv[0], argv.data());
    ::_exit(127);
  }
  ::close(output[1]);
  ::close(error_fd);
  const std::string https = read_line(output[0]);
  const std::string plain = read_line(output[0]);
  ::close(output[0]);
  port_ = std::atoi(https.c_str());
  http_port_ = std::atoi(plain.c_str());
  if (port_ <= 0 || http_port_ <= 0) why_ = "the fake broker did not start:\n" + file_text(error_path);
}

FakeBroker::~FakeBroker() {
  stop();
  std::error_code error;
  if (!folder_.empty()) fs::remove_all(folder_, error);
}

void FakeBroker::stop() {
  if (pid_ <= 0) return;
  ::kill(pid_, SIGTERM);
  for (int waited = 0; waited < 100; ++waited) {
    if (::waitpid(pid_, nullptr, WNOHANG) == pid_) {
      pid_ = -1;
      return;
    }
    ::usleep(20'000);
  }
  ::kill(pid_, SIGKILL);
  ::waitpid(pid_, nullptr, 0);
  pid_ = -1;
}

std::vector<boost::json::object> FakeBroker::requests() const { return json_lines(log_path()); }

std::vector<boost::json::object> FakeBroker::requests_to(const std::string& prefix) const {
  std::vector<boost::json::object> found;
  for (auto& request : requests()) {
    if (request_field(request, "path").rfind(prefix, 0) == 0) found.push_back(std::move(request));
  }
  return found;
}

std::string request_field(const boost::json::object& request, const char* field) {
  const auto* value = request.if_contains(field);
  return value != nullptr && value->is_string() ? std::string(value->as_string()) : std::string();
}

std::string request_header(const boost::json::object& request, const std::string& name) {
  const auto* headers = request.if_contains("headers");
  if (headers == nullptr || !headers->is_object()) return "";
  for (const auto& [key, value] : headers->as_object()) {
    if (strcasecmp(std::string(key).c_str(), name.c_str()) == 0 && value.is_string())
      return std::string(value.as_string());
  }
  return "";
}

}  // namespace deskd::e2e
