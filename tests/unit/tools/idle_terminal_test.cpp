// A desk's idle terminal closed after DeskToolSettings::idle_terminal (a tiny one here, on
// the real steady clock the session's timer waits on): its sandboxes (bash's and the file
// opener's) are gone, the next command runs in a fresh terminal and says so, and a terminal
// whose background job still runs is kept.

#include <dirent.h>
#include <unistd.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <boost/asio.hpp>
#include <boost/json.hpp>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "policy/confinement.h"
#include "runner/tools/desk_tools.h"
#include "sandbox/desk_preparation.h"

namespace deskd::tools {
namespace {

namespace asio = boost::asio;
namespace fs = std::filesystem;
namespace json = boost::json;
using ::testing::HasSubstr;
using ::testing::Not;
using namespace std::chrono_literals;

constexpr std::chrono::milliseconds kIdle = 300ms;

// The processes whose parent is this test: the sandboxes' inits (each sandbox is one child).
int sandboxes_running() {
  int count = 0;
  DIR* proc = ::opendir("/proc");
  while (const dirent* entry = ::readdir(proc)) {
    if (entry->d_name[0] < '1' || entry->d_name[0] > '9') continue;
    std::ifstream status(std::string("/proc/") + entry->d_name + "/status");
    for (std::string line; std::getline(status, line);) {
      if (line.rfind("PPid:", 0) == 0) {
        if (std::atoi(line.c_str() + 5) == ::getpid()) ++count;
        break;
      }
    }
  }
  ::closedir(proc);
  return count;
}

class IdleTerminalTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/var/tmp/deskd-idle-terminal-XXXXXX";
    root_ = ::mkdtemp(pattern);
    fs::permissions(root_, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                               fs::perms::others_read | fs::perms::others_exec);
    fs::create_directories(root_ / "desk");
    std::ofstream(root_ / "desk" / "README.md") << "a desk\n";
    auto confinement = policy::Confinement::create(root_ / "desk", {}).value();
    auto spec = sandbox::SandboxSpecBuilder(confinement).build().value();
    ASSERT_TRUE(sandbox::prepare_desk_for_sandbox(spec).ok());
    DeskToolSettings settings{std::move(spec), 10.0, 20000, "desk", {}};
    settings.idle_terminal = kIdle;
    registry_.emplace(make_desk_tools(io_.get_executor(), std::move(settings)));
  }
  void TearDown() override {
    if (registry_) finish(registry_->close());
    registry_.reset();
    fs::remove_all(root_);
  }

  // Runs the loop until `operation` has its answer, and no further.
  template <typename T>
  T answer(asio::awaitable<T> operation) {
    auto future = asio::co_spawn(io_, std::move(operation), asio::use_future);
    io_.restart();
    while (future.wait_for(0s) != std::future_status::ready) io_.run_one();
    return future.get();
  }
  // Runs the loop until nothing is left to do: with an idle watch, until it closed all.
  template <typename T>
  T finish(asio::awaitable<T> operation) {
    auto future = asio::co_spawn(io_, std::move(operation), asio::use_future);
    io_.restart();
    io_.run();
    return future.get();
  }
  ToolResult call(std::string_view tool, json::object input) { return answer(registry_->call(tool, input)); }

  asio::io_context io_;
  fs::path root_;
  std::optional<ToolRegistry> registry_;
};

TEST_F(IdleTerminalTest, AnIdleTerminalClosesAndTheNextCommandSaysItIsFresh) {
  ASSERT_FALSE(call("read_file", {{"path", "README.md"}}).is_error);  // starts the file opener
  ASSERT_EQ(call("bash", {{"command", "cd memory 2>/dev/null || cd /tmp; export KEPT=yes"}}).exit_status, 0);
  EXPECT_EQ(sandboxes_running(), 2);  // bash's and the file opener's

  const auto idle_from = std::chrono::steady_clock::now();
  io_.restart();
  io_.run();  // the only work left is the idle watch: it returns once all is closed
  // The idle time runs from the command's end, a little before idle_from was taken.
  EXPECT_GE(std::chrono::steady_clock::now() - idle_from, kIdle - 50ms);
  EXPECT_EQ(sandboxes_running(), 0);

  const ToolResult fresh = call("bash", {{"command", "pwd; echo \"[$KEPT]\""}});
  EXPECT_FALSE(fresh.is_error) << fresh.text;
  EXPECT_THAT(fresh.text, HasSubstr("The terminal had not been used for 0.005 minutes and was closed to free its "
                                    "memory, so this command ran in a fresh one"));
  EXPECT_THAT(fresh.text, HasSubstr((root_ / "desk").native() + "\n[]\n[exit status 0]"));
  // Told once: the command after it runs in the same terminal.
  EXPECT_EQ(call("bash", {{"command", "echo again"}}).text, "again\n[exit status 0]");
  EXPECT_FALSE(call("read_file", {{"path", "README.md"}}).is_error);  // a new file opener
}

TEST_F(IdleTerminalTest, ATerminalWithABackgroundJobRunningIsKept) {
  const ToolResult started = call("bash_background", {{"command", "sleep 3"}});
  ASSERT_FALSE(started.is_error) << started.text;
  ASSERT_EQ(call("bash", {{"command", "export KEPT=yes"}}).exit_status, 0);
  io_.restart();
  io_.run_for(3 * kIdle);  // past the idle time, while the job sleeps
  EXPECT_EQ(sandboxes_running(), 1);
  EXPECT_EQ(call("bash", {{"command", "echo \"[$KEPT]\""}}).text, "[yes]\n[exit status 0]");
}

TEST_F(IdleTerminalTest, ARestartAfterAnIdleClosingIsNotToldTwice) {
  ASSERT_EQ(call("bash", {{"command", "true"}}).exit_status, 0);
  io_.restart();
  io_.run();
  EXPECT_EQ(sandboxes_running(), 0);
  EXPECT_FALSE(call("bash_restart", {}).is_error);
  EXPECT_THAT(call("bash", {{"command", "echo fresh"}}).text, Not(HasSubstr("had not been used")));
}

}  // namespace
}  // namespace deskd::tools
