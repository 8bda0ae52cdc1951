#include "e2e/daemon_fixture.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <boost/json.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

namespace deskd::e2e {

namespace json = boost::json;
namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

namespace {

std::chrono::milliseconds left_until(Clock::time_point deadline) {
  return std::max(std::chrono::milliseconds(0),
                  std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()));
}

// Waits up to `timeout` for `fd` to be readable; false on timeout.
bool wait_readable(int fd, std::chrono::milliseconds timeout) {
  pollfd waiting{fd, POLLIN, 0};
  for (;;) {
    const int ready = ::poll(&waiting, 1, static_cast<int>(timeout.count()));
    if (ready >= 0) return ready > 0;
    if (errno != EINTR) return false;
  }
}

void write_file(const std::string& path, const std::string& text) { std::ofstream(path) << text; }

}  // namespace

const char* deskctl_binary() { return DESKCTL_BINARY; }

std::string file_text(const std::string& path) {
  std::ifstream file(path);
  std::stringstream text;
  text << file.rdbuf();
  return text.str();
}

std::vector<json::object> json_lines(const std::string& path) {
  std::vector<json::object> objects;
  std::istringstream lines(file_text(path));
  for (std::string line; std::getline(lines, line);) {
    boost::system::error_code error;
    json::value value = json::parse(line, error);
    if (!error && value.is_object()) objects.push_back(std::move(value.as_object()));
  }
  return objects;
}

std::string event_kind(const json::object& event) {
  const json::value* kind = event.if_contains("kind");
  return kind != nullptr && kind->is_string() ? std::string(kind->as_string()) : std::string();
}

std::string event_data(const json::object& event, std::string_view field) {
  const json::value* data = event.if_contains("data");
  if (data == nullptr || !data->is_object()) return {};
  const json::value* value = data->as_object().if_contains(field);
  return value != nullptr && value->is_string() ? std::string(value->as_string()) : std::string();
}

std::function<bool(const json::object&)> is_event(std::string kind, std::string trigger) {
  return [kind = std::move(kind), trigger = std::move(trigger)](const json::object& event) {
    return event_kind(event) == kind && (trigger.empty() || event_data(event, "trigger") == trigger);
  };
}

// --- DeskctlProcess ---

DeskctlProcess::DeskctlProcess(const std::vector<std::string>& arguments) : started_(Clock::now()) {
  int output_pipe[2];
  int error_pipe[2];
  if (::pipe2(output_pipe, O_CLOEXEC) != 0 || ::pipe2(error_pipe, O_CLOEXEC) != 0) {
    std::perror("pipe2");
    return;
  }
  std::vector<std::string> argv_storage = {deskctl_binary()};
  argv_storage.insert(argv_storage.end(), arguments.begin(), arguments.end());
  std::vector<char*> argv;
  for (auto& argument : argv_storage) argv.push_back(argument.data());
  argv.push_back(nullptr);
  const int null_fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  pid_ = ::fork();
  if (pid_ == 0) {
    ::dup2(null_fd, 0);
    ::dup2(output_pipe[1], 1);
    ::dup2(error_pipe[1], 2);
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  ::close(null_fd);
  ::close(output_pipe[1]);
  ::close(error_pipe[1]);
  output_ = output_pipe[0];
  error_ = error_pipe[0];
}

DeskctlProcess::~DeskctlProcess() {
  if (pid_ > 0) {
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
  }
  if (output_ >= 0) ::close(output_);
  if (error_ >= 0) ::close(error_);
}

DeskctlResult DeskctlProcess::finish(std::chrono::milliseconds timeout) {
  DeskctlResult result;
  if (pid_ <= 0) return result;
  const auto deadline = Clock::now() + timeout;
  // Both pipes are read together: deskctl may fill either while the other waits.
  bool output_open = true;
  bool error_open = true;
  while ((output_open || error_open) && left_until(deadline).count() > 0) {
    pollfd waiting[2] = {{output_open ? output_ : -1, POLLIN, 0}, {error_open ? error_ : -1, POLLIN, 0}};
    const int ready = ::poll(waiting, 2, static_cast<int>(left_until(deadline).count()));
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) break;
    char chunk[65536];
    for (int index = 0; index < 2; ++index) {
      if (waiting[index].revents == 0) continue;
      const ssize_t count = ::read(waiting[index].fd, chunk, sizeof chunk);
      if (count <= 0) {
        (index == 0 ? output_open : error_open) = false;
      } else {
        (index == 0 ? result.output : result.error_output).append(chunk, static_cast<std::size_t>(count));
      }
    }
  }
  int raw = 0;
  for (;;) {
    const pid_t waited = ::waitpid(pid_, &raw, WNOHANG);
    if (waited == pid_) {
      result.exit_code = WIFEXITED(raw) ? WEXITSTATUS(raw) : 128 + WTERMSIG(raw);
      break;
    }
    if (left_until(deadline).count() == 0) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
      result.exit_code = -1;
      break;
    }
    std::this_thread::sleep_for(5ms);
  }
  pid_ = -1;
  result.elapsed = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - started_);
  return result;
}

// --- ControlConnection ---

ControlConnection::ControlConnection(const std::string& socket_path) {
  sockaddr_un address{};
  if (socket_path.size() >= sizeof address.sun_path) return;
  address.sun_family = AF_UNIX;
  std::snprintf(address.sun_path, sizeof address.sun_path, "%s", socket_path.c_str());
  fd_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd_ < 0) return;
  int connected = -1;
  do {
    connected = ::connect(fd_, reinterpret_cast<sockaddr*>(&address), sizeof address);
  } while (connected != 0 && errno == EINTR);
  if (connected != 0) {
    ::close(fd_);
    fd_ = -1;
    return;
  }
  // A deskd that stops reading must fail a test, not hang it.
  timeval send_timeout{30, 0};
  ::setsockopt(fd_, SOL_SOCKET, SO_SNDTIMEO, &send_timeout, sizeof send_timeout);
}

ControlConnection::~ControlConnection() {
  if (fd_ >= 0) ::close(fd_);
}

ControlConnection::ControlConnection(ControlConnection&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)), buffer_(std::move(other.buffer_)) {}

bool ControlConnection::send_raw(std::string_view bytes) {
  if (fd_ < 0) return false;
  while (!bytes.empty()) {
    const ssize_t written = ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL);
    if (written < 0 && errno == EINTR) continue;
    if (written <= 0) return false;
    bytes.remove_prefix(static_cast<std::size_t>(written));
  }
  return true;
}

bool ControlConnection::send(const json::object& request) { return send_raw(json::serialize(request) + "\n"); }

std::optional<std::string> ControlConnection::read_line(std::chrono::milliseconds timeout) {
  if (fd_ < 0) return std::nullopt;
  const auto deadline = Clock::now() + timeout;
  for (;;) {
    if (const auto newline = buffer_.find('\n'); newline != std::string::npos) {
      std::string line = buffer_.substr(0, newline);
      buffer_.erase(0, newline + 1);
      return line;
    }
    if (!wait_readable(fd_, left_until(deadline))) return std::nullopt;
    char chunk[65536];
    const ssize_t count = ::recv(fd_, chunk, sizeof chunk, 0);
    if (count < 0 && errno == EINTR) continue;
    if (count <= 0) return std::nullopt;
    buffer_.append(chunk, static_cast<std::size_t>(count));
  }
}

std::optional<json::object> ControlConnection::read_object(std::chrono::milliseconds timeout) {
  auto line = read_line(timeout);
  if (!line) return std::nullopt;
  boost::system::error_code error;
  json::value value = json::parse(*line, error);
  if (error || !value.is_object()) return std::nullopt;
  return std::move(value.as_object());
}

std::optional<json::object> ControlConnection::call(json::object request, std::chrono::milliseconds timeout) {
  const json::value id = request["id"];
  if (!send(request)) return std::nullopt;
  const auto deadline = Clock::now() + timeout;
  while (left_until(deadline).count() > 0) {
    auto line = read_object(left_until(deadline));
    if (!line) return std::nullopt;
    const json::value* line_id = line->if_contains("id");
    if (line_id != nullptr && *line_id == id && line->contains("ok")) return line;
  }
  return std::nullopt;
}

std::optional<json::object> ControlConnection::wait_for_event(const std::function<bool(const json::object&)>& wanted,
                                                              std::chrono::milliseconds timeout,
                                                              std::vector<json::object>* seen) {
  const auto deadline = Clock::now() + timeout;
  while (left_until(deadline).count() > 0) {
    auto line = read_object(left_until(deadline));
    if (!line) return std::nullopt;
    const json::value* event = line->if_contains("event");
    if (event == nullptr || !event->is_object()) continue;
    if (seen != nullptr) seen->push_back(event->as_object());
    if (wanted(event->as_object())) return event->as_object();
  }
  return std::nullopt;
}

bool ControlConnection::closed_by_peer(std::chrono::milliseconds timeout) {
  if (fd_ < 0) return true;
  const auto deadline = Clock::now() + timeout;
  for (;;) {
    if (!wait_readable(fd_, left_until(deadline))) return false;
    char chunk[65536];
    const ssize_t count = ::recv(fd_, chunk, sizeof chunk, 0);
    if (count < 0 && errno == EINTR) continue;
    if (count == 0 || (count < 0 && (errno == ECONNRESET || errno == EPIPE))) return true;
    if (count < 0) return false;
  }
}

// --- ServeDaemon ---

ServeDaemon::ServeDaemon(std::initializer_list<DeskSetup> desks, std::string runner_settings, std::string tables)
    : ServeDaemon(std::vector<DeskSetup>(desks), std::move(runner_settings), std::move(tables)) {}

ServeDaemon::ServeDaemon(const std::vector<DeskSetup>& desks, std::string runner_settings, std::string tables) {
  std::string pattern = "/var/tmp/deskd-serve-XXXXXX";
  if (::mkdtemp(pattern.data()) == nullptr) {
    std::perror("mkdtemp");
    return;
  }
  folder_ = fs::canonical(pattern);
  // World-readable: under a root deskd the sandbox runs as its own uid and must enter.
  fs::create_directories(folder_ + "/desks");
  ::chmod(folder_.c_str(), 0755);
  ::chmod((folder_ + "/desks").c_str(), 0755);
  std::string config = "[runner]\n"
                       "state_folder = \"state\"\n"
                       "socket = \"state/deskd.sock\"\n"
                       "shutdown_grace_seconds = 1\n" +
                       runner_settings +
                       "\n"
                       // The tests' desks are thrown away; a quota would be an image and loop
                       // mounts per desk. disk_quota_e2e_test gives desks one on purpose.
                       "[sandbox]\n"
                       "disk_quota_mb = \"none\"\n" +
                       tables + "\n";
  for (const auto& desk : desks) {
    const std::string directory = desk_directory(desk.name);
    fs::create_directory(directory);
    ::chmod(directory.c_str(), 0755);
    write_file(directory + "/README.md", "This desk is for tests.\n");
    write_file(directory + "/plan.md", "plan v1\n");
    write_file(directory + "/.env", "API_KEY=deskd-serve-secret\n");
    write_file(script_path(desk.name), desk.script);
    std::string hidden = "\"desks/" + desk.name + "/.env\"";
    for (const auto& path : desk.hidden_paths) hidden += ", \"" + path + "\"";
    config += "[[desk]]\n"
              "name = \"" + desk.name + "\"\n"
              "directory = \"desks/" + desk.name + "\"\n"
              "hidden_paths = [" + hidden + "]\n" +
              desk.settings + "\n"
              "[desk.model]\n" +
              (desk.model.empty() ? "script = \"" + desk.name + ".jsonl\"\n" : desk.model) + "\n" +
              desk.tables + "\n";
  }
  write_file(config_path(), config);
}

ServeDaemon::~ServeDaemon() {
  if (deskd_ && deskd_->running()) {
    deskd_->signal(SIGTERM);
    (void)deskd_->wait(15s);  // kills it past the timeout
  }
  deskd_.reset();
  std::error_code error;
  if (!folder_.empty()) fs::remove_all(folder_, error);
}

void ServeDaemon::launch(const std::vector<std::string>& environment) {
  deskd_ = std::make_unique<DeskdProcess>(std::vector<std::string>{"serve", "--config", config_path()},
                                          std::nullopt, environment, run_as_);
}

std::vector<std::pair<std::string, std::string>> ServeDaemon::desk_states(std::chrono::milliseconds timeout) const {
  const auto deadline = Clock::now() + timeout;
  std::optional<ControlConnection> connection;
  while (left_until(deadline).count() > 0) {
    connection.emplace(socket_path());
    if (connection->connected()) break;
    std::this_thread::sleep_for(10ms);
  }
  if (!connection || !connection->connected()) return {};
  auto reply = connection->call({{"id", "ready"}, {"op", "desks"}}, left_until(deadline));
  const json::value* desks = reply ? reply->if_contains("desks") : nullptr;
  if (desks == nullptr || !desks->is_array()) return {};
  std::vector<std::pair<std::string, std::string>> states;
  for (const auto& desk : desks->as_array()) {
    const json::object& object = desk.as_object();
    const auto text = [&](const char* key) {
      const json::value* value = object.if_contains(key);
      return value != nullptr && value->is_string() ? std::string(value->as_string()) : std::string();
    };
    states.emplace_back(text("name"), text("state"));
  }
  return states;
}

bool ServeDaemon::start(const std::vector<std::string>& environment, std::string* why,
                        std::chrono::milliseconds timeout) {
  launch(environment);
  const auto deadline = Clock::now() + timeout;
  while (left_until(deadline).count() > 0) {
    if (!deskd_->running()) {
      if (why != nullptr) *why = "deskd exited with status " + std::to_string(deskd_->wait()) + ":\n" + deskd_->error_output();
      return false;
    }
    // The socket listens before the desks start; it answers once they have, and a desk
    // says "starting" while it reads its journal.
    const auto states = desk_states(left_until(deadline));
    if (!states.empty() && std::none_of(states.begin(), states.end(), [](const auto& desk) { return desk.second == "starting"; })) {
      return true;
    }
    std::this_thread::sleep_for(20ms);
  }
  if (why != nullptr) *why = "the socket did not answer in time:\n" + deskd_->error_output();
  return false;
}

void ServeDaemon::run_as(uid_t uid) {
  run_as_ = uid;
  std::error_code error;
  if (::lchown(folder_.c_str(), uid, uid) != 0) ADD_FAILURE() << "lchown " << folder_;
  for (const auto& entry : fs::recursive_directory_iterator(folder_, error)) {
    if (::lchown(entry.path().c_str(), uid, uid) != 0) ADD_FAILURE() << "lchown " << entry.path();
  }
}

int ServeDaemon::stop(std::chrono::milliseconds timeout) {
  if (!deskd_) return -1;
  deskd_->signal(SIGTERM);
  return deskd_->wait(timeout);
}

DeskctlResult ServeDaemon::deskctl(const std::vector<std::string>& arguments, std::chrono::milliseconds timeout) const {
  return deskctl_in_background(arguments)->finish(timeout);
}

std::unique_ptr<DeskctlProcess> ServeDaemon::deskctl_in_background(const std::vector<std::string>& arguments) const {
  std::vector<std::string> full = {"--socket", socket_path()};
  full.insert(full.end(), arguments.begin(), arguments.end());
  return std::make_unique<DeskctlProcess>(full);
}

std::optional<ControlConnection> ServeDaemon::follow(const std::string& desk, bool replay) const {
  ControlConnection connection(socket_path());
  if (!connection.connected()) return std::nullopt;
  json::object request{{"id", "follow"}, {"op", "follow"}, {"replay", replay}};
  if (!desk.empty()) request["desk"] = desk;
  auto reply = connection.call(std::move(request));
  if (!reply) return std::nullopt;
  const json::value* ok = reply->if_contains("ok");
  if (ok == nullptr || !ok->is_bool() || !ok->as_bool()) return std::nullopt;
  return connection;
}

}  // namespace deskd::e2e
