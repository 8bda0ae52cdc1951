// The desk's tool set from make_desk_tools() against a real sandbox: the bash tools' texts,
// statuses and error flags, the background jobs, restarting and closing, and the file tools
// seeing the same world as bash.

#include "runner/tools/desk_tools.h"

#include <stdlib.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <boost/asio.hpp>
#include <boost/json.hpp>
#include <filesystem>
#include <fstream>

#include "policy/confinement.h"
#include "runner/tools/bash_tools.h"
#include "sandbox/desk_preparation.h"

namespace deskd::tools {
namespace {

namespace asio = boost::asio;
namespace fs = std::filesystem;
namespace json = boost::json;
using ::testing::HasSubstr;
using ::testing::StartsWith;

class DeskToolsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/var/tmp/deskd-desk-tools-XXXXXX";
    root_ = ::mkdtemp(pattern);
    fs::permissions(root_, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                               fs::perms::others_read | fs::perms::others_exec);
    fs::create_directories(root_ / "desk");
    std::ofstream(root_ / "desk" / ".env") << "API_KEY=hidden\n";
    const std::vector<fs::path> hidden = {root_ / "desk" / ".env"};
    auto confinement = policy::Confinement::create(root_ / "desk", hidden).value();
    auto spec = sandbox::SandboxSpecBuilder(confinement).build().value();
    ASSERT_TRUE(sandbox::prepare_desk_for_sandbox(spec).ok());
    registry_.emplace(make_desk_tools(io_.get_executor(), DeskToolSettings{std::move(spec), 1.0, 20000, "desk", {}}));
  }
  void TearDown() override {
    if (registry_) wait(registry_->close());
    registry_.reset();
    fs::remove_all(root_);
  }

  template <typename T>
  T wait(asio::awaitable<T> operation) {
    auto future = asio::co_spawn(io_, std::move(operation), asio::use_future);
    io_.restart();
    io_.run();
    return future.get();
  }
  ToolResult call(std::string_view tool, json::object input) { return wait(registry_->call(tool, input)); }
  ToolResult bash(std::string command) { return call("bash", {{"command", std::move(command)}}); }

  asio::io_context io_;
  fs::path root_;
  std::optional<ToolRegistry> registry_;
};

TEST_F(DeskToolsTest, HasTheBashToolsThenTheFileToolsWithObjectSchemas) {
  std::vector<std::string> names;
  for (const auto& tool : registry_->tools()) {
    names.emplace_back(tool->name());
    EXPECT_FALSE(tool->description().empty()) << tool->name();
    std::error_code error;
    const json::value schema = json::parse(tool->input_schema(), error);
    ASSERT_FALSE(error) << tool->name();
    EXPECT_EQ(schema.at("type"), "object") << tool->name();
  }
  EXPECT_EQ(names, (std::vector<std::string>{"bash", "bash_background", "check_background", "bash_restart",
                                             "read_file", "write_file", "edit_file", "list_directory",
                                             "propose_file_change"}));
}

TEST_F(DeskToolsTest, BashGivesTheOutputAndTheStatusOnALastLine) {
  const ToolResult result = bash("echo hi");
  EXPECT_EQ(result.text, "hi\n[exit status 0]");
  EXPECT_FALSE(result.is_error);
  EXPECT_EQ(result.exit_status, 0);
  EXPECT_EQ(bash("printf 'no newline'").text, "no newline\n[exit status 0]");
  EXPECT_EQ(bash("true").text, "[exit status 0]");
}

TEST_F(DeskToolsTest, ANonzeroStatusIsAnAnswerNotAnError) {
  const ToolResult result = bash("echo nope >&2; exit_with() { return $1; }; exit_with 2");
  EXPECT_EQ(result.text, "nope\n[exit status 2]");
  EXPECT_FALSE(result.is_error);
  EXPECT_EQ(result.exit_status, 2);
}

TEST_F(DeskToolsTest, BashCarriesStateFromOneCallToTheNext) {
  bash("cd scratch && export GREETING=hello");
  EXPECT_EQ(bash("pwd; echo $GREETING").text, (root_ / "desk" / "scratch").native() + "\nhello\n[exit status 0]");
}

TEST_F(DeskToolsTest, ATimeoutIsAnErrorWithoutStatus) {
  const ToolResult result = bash("echo started; sleep 5");
  EXPECT_TRUE(result.is_error);
  EXPECT_FALSE(result.exit_status.has_value());
  EXPECT_THAT(result.text, StartsWith("The command did not finish within 1 seconds."));
  EXPECT_THAT(result.text, HasSubstr("started\n[no exit status]"));
  EXPECT_EQ(bash("echo after").text, "after\n[exit status 0]");
}

TEST_F(DeskToolsTest, BashNeedsACommandString) {
  for (const json::object& input : {json::object{}, json::object{{"command", 3}}, json::object{{"cmd", "ls"}}}) {
    const ToolResult result = call("bash", input);
    EXPECT_TRUE(result.is_error);
    EXPECT_EQ(result.text, "bash needs a string 'command'.");
  }
}

TEST_F(DeskToolsTest, ABackgroundJobStartsAndCanBeChecked) {
  const ToolResult started = call("bash_background", {{"command", "echo from the job; sleep 0.2; echo done"}});
  ASSERT_FALSE(started.is_error) << started.text;
  ASSERT_THAT(started.text, StartsWith("Started background job "));
  const std::string job_id = started.text.substr(23, 8);
  EXPECT_EQ(started.text, "Started background job " + job_id + ". Check it with check_background.");
  for (int attempt = 0; attempt < 50; ++attempt) {
    const ToolResult checked = call("check_background", {{"job_id", job_id}});
    ASSERT_FALSE(checked.is_error) << checked.text;
    if (checked.text.starts_with("finished")) {
      EXPECT_EQ(checked.text, "finished\nfrom the job\ndone\n");
      return;
    }
    EXPECT_THAT(checked.text, StartsWith("running"));
    bash("sleep 0.1");
  }
  FAIL() << "the job never finished";
}

TEST_F(DeskToolsTest, CheckingAnUnknownJobIsAnError) {
  for (const char* job_id : {"deadbeef", "../../etc", "$(id)", ""}) {
    const ToolResult checked = call("check_background", {{"job_id", job_id}});
    EXPECT_TRUE(checked.is_error) << job_id;
    EXPECT_THAT(checked.text, StartsWith(std::string("no such job: ") + job_id));
  }
  EXPECT_EQ(call("check_background", {}).text, "check_background needs a string 'job_id'.");
}

TEST_F(DeskToolsTest, RestartResetsTheTerminal) {
  bash("export KEPT=yes; cd memory");
  const ToolResult restarted = call("bash_restart", {});
  EXPECT_FALSE(restarted.is_error);
  EXPECT_THAT(restarted.text, StartsWith("The terminal was restarted"));
  EXPECT_EQ(bash("pwd; echo \"[$KEPT]\"").text, (root_ / "desk").native() + "\n[]\n[exit status 0]");
}

TEST_F(DeskToolsTest, FileToolsAndBashSeeTheSameWorld) {
  const ToolResult written = call("write_file", {{"path", "notes/plan.md"}, {"content", "step one\n"}});
  ASSERT_FALSE(written.is_error) << written.text;
  EXPECT_EQ(bash("cat notes/plan.md").text, "step one\n[exit status 0]");
  bash("echo from bash > scratch/out.txt");
  const ToolResult read = call("read_file", {{"path", "scratch/out.txt"}});
  ASSERT_FALSE(read.is_error) << read.text;
  EXPECT_THAT(read.text, HasSubstr("from bash"));
  // The hidden file: refused to the file tools, masked for bash.
  const ToolResult secret = call("read_file", {{"path", ".env"}});
  EXPECT_TRUE(secret.is_error);
  EXPECT_THAT(secret.text, HasSubstr("holds secrets and cannot be read."));
  EXPECT_THAT(bash("cat .env").text, ::testing::Not(HasSubstr("API_KEY")));
}

TEST_F(DeskToolsTest, ClosingTheRegistryClosesTheTerminal) {
  EXPECT_FALSE(bash("echo before").is_error);
  wait(registry_->close());
  const ToolResult after = bash("echo after");
  EXPECT_TRUE(after.is_error);
  EXPECT_EQ(after.text, "The tools are closed: the desk has stopped.");
}

TEST(BashResultTest, WordsEveryOutcome) {
  EXPECT_EQ(bash_result({"out\n", 0, false, {}}).text, "out\n[exit status 0]");
  EXPECT_EQ(bash_result({"", 127, false, {}}).text, "[exit status 127]");
  const ToolResult stopped = bash_result({"The terminal is closed: the desk has stopped.", std::nullopt, false, {}});
  EXPECT_EQ(stopped.text, "The terminal is closed: the desk has stopped.\n[no exit status]");
  EXPECT_TRUE(stopped.is_error);
  EXPECT_EQ(stopped.ends_turn, "");
  const ToolResult cut = bash_result({"a\n[... 9 characters left out ...]\nb", 1, true, {}});
  EXPECT_TRUE(cut.truncated);
  EXPECT_FALSE(cut.is_error);
}

// A terminal that could not start is the desk's failure, not the command's: it ends the
// turn, naming the step.
TEST(BashResultTest, ATerminalThatDidNotStartEndsTheTurn) {
  const std::string why = "The sandbox could not be set up: enter the desk folder failed: No such file or directory";
  const ToolResult failed = bash_result({"The terminal could not start: " + why, std::nullopt, false, why});
  EXPECT_TRUE(failed.is_error);
  EXPECT_EQ(failed.ends_turn, "The desk's terminal could not start, so the turn cannot go on: " + why);
}

}  // namespace
}  // namespace deskd::tools
