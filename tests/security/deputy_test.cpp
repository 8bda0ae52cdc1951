// The file tools resolve a path in the desk's own view (issue 26): every lstat and readlink
// of the resolution is made by the desk's file opener inside its sandbox, so no message
// says anything the desk's bash could not find out — not that a path goes through a file
// the sandbox hides, nor where deskd's own descriptors lead. And a proposal reads the file
// only with the desk's rights: what the desk cannot read, it cannot propose to change (no
// "+N -M lines" oracle), and a FIFO is never opened.

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "security/mcp_session.h"
#include "security/sandbox_runner.h"

namespace deskd::security_testing {
namespace {

namespace fs = std::filesystem;
using ::testing::AnyOf;
using ::testing::HasSubstr;
using ::testing::Not;

class DeputyTest : public SandboxTest {
 protected:
  std::vector<ToolAnswer> tools(const std::vector<ToolCall>& calls, const std::vector<std::string>& extra = {}) {
    SandboxRun run;
    auto answers = call_tools(daemon(), desk(), calls, &run, extra);
    for (const auto& answer : answers) EXPECT_TRUE(answer.answered) << run.describe();
    return answers;
  }
  static ToolCall read(const std::string& path) { return {"read_file", R"({"path":)" + json_string(path) + "}"}; }
  static ToolCall list(const std::string& path) { return {"list_directory", R"({"path":)" + json_string(path) + "}"}; }
};

TEST_P(DeputyTest, ResolutionErrorsSayOnlyWhatTheDesksBashLearns) {
  // Outside the desk's view: a folder beside the desk holding a file, and deskd's own
  // descriptors and binary, which the old resolution (with deskd's rights) described.
  const HostFolder outside("/var/tmp/" + unique_name("deskd-deputy"), daemon_host_uid(daemon()));
  write_host_file(outside.path() + "/file.txt", "beside\n");
  std::vector<ToolCall> calls = {read(outside.path() + "/file.txt/x"), list(outside.path() + "/file.txt/x"),
                                 read("/proc/self/exe/x"), read("/proc/self/fd/1/x"), read("/proc/self/fd/2/x"),
                                 read("/proc/self/fd/7/x")};
  if (fs::exists("/root/.bashrc")) calls.push_back(read("/root/.bashrc/x"));
  const auto answers = tools(calls);
  ASSERT_EQ(answers.size(), calls.size());
  for (std::size_t index = 0; index < answers.size(); ++index) {
    SCOPED_TRACE(calls[index].arguments_json);
    EXPECT_TRUE(answers[index].is_error) << answers[index].text;
    EXPECT_THAT(answers[index].text, Not(HasSubstr("which is a file"))) << answers[index].text;
    EXPECT_THAT(answers[index].text, Not(HasSubstr(deskd_binary())));
    EXPECT_THAT(answers[index].text, Not(HasSubstr("/dev/null")));
    EXPECT_THAT(answers[index].text, Not(HasSubstr(outside.path() + "/file.txt,")));
  }
  // What is not in the sandbox's view does not exist, exactly as for its bash; nor do
  // descriptors the file opener does not have.
  for (std::size_t index = 0; index < answers.size(); ++index) {
    EXPECT_THAT(answers[index].text, HasSubstr("does not exist")) << calls[index].arguments_json;
  }
  const SandboxRun bash = sandbox({"/bin/bash", "-c", "cat " + outside.path() + "/file.txt/x"});
  EXPECT_THAT(bash.err, HasSubstr("No such file or directory")) << bash.describe();
}

TEST_P(DeputyTest, HiddenPathsKeepThePolicysSentence) {
  const auto answers = tools({read(".env/x"), read("secrets/key.txt/x"), read(".env")});
  for (const auto& answer : answers) {
    EXPECT_TRUE(answer.is_error);
    EXPECT_THAT(answer.text, HasSubstr("holds secrets and cannot be read")) << answer.text;
    EXPECT_THAT(answer.text, Not(HasSubstr(desk().secret())));
  }
}

TEST_P(DeputyTest, WhatTheDeskCannotReadItCannotPropose) {
  const HostFolder store("/var/tmp/" + unique_name("deskd-proposals"), daemon_host_uid(daemon()));
  write_host_file(desk().path("pin.txt"), "417\n", 0600);  // root's alone: neither the desk's nor its daemon's
  ASSERT_EQ(::chown(desk().path("pin.txt").c_str(), 0, 0), 0);
  std::vector<ToolCall> calls;
  for (const char* guess : {"000\\n", "417\\n", "999\\n"}) {
    calls.push_back({"propose_file_change",
                     std::string(R"({"path":"pin.txt","reason":"guess","content":")") + guess + "\"}"});
  }
  const auto answers = tools(calls, {"--proposals", store.path()});
  for (const auto& answer : answers) {
    EXPECT_TRUE(answer.is_error) << answer.text;
    EXPECT_THAT(answer.text, Not(HasSubstr("lines"))) << answer.text;
    EXPECT_THAT(answer.text, Not(HasSubstr("already holds"))) << answer.text;
  }
  EXPECT_TRUE(fs::is_empty(store.path())) << "a proposal was stored";
}

TEST_P(DeputyTest, AProposalOutsideTheDeskFolderIsRefused) {
  const HostFolder store("/var/tmp/" + unique_name("deskd-proposals"), daemon_host_uid(daemon()));
  const auto answers = tools({{"propose_file_change", R"({"path":"/etc/profile.d/x.sh","reason":"r","content":"id"})"},
                              {"propose_file_change", R"({"path":"/etc/hostname","reason":"r","content":"x"})"}},
                             {"--proposals", store.path()});
  for (const auto& answer : answers) {
    EXPECT_TRUE(answer.is_error);
    EXPECT_THAT(answer.text, HasSubstr("is outside your desk folder")) << answer.text;
  }
  EXPECT_TRUE(fs::is_empty(store.path()));
}

TEST_P(DeputyTest, AFifoIsNeverOpenedByAProposal) {
  const HostFolder store("/var/tmp/" + unique_name("deskd-proposals"), daemon_host_uid(daemon()));
  const std::string fifo = desk().path("pipe");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0666), 0);
  ::chmod(fifo.c_str(), 0666);
  desk().hand_over(fifo);
  // A writer blocked until some reader opens the FIFO: it must still be blocked afterwards.
  const std::string released = desk().root() + "/released";
  const pid_t writer = ::fork();
  ASSERT_GE(writer, 0);
  if (writer == 0) {
    const int fd = ::open(fifo.c_str(), O_WRONLY);
    if (fd >= 0) ::close(::open(released.c_str(), O_WRONLY | O_CREAT, 0644));
    ::_exit(0);
  }
  const auto answers =
      tools({{"propose_file_change", R"({"path":"pipe","reason":"r","content":"x"})"}}, {"--proposals", store.path()});
  ASSERT_EQ(answers.size(), 1u);
  EXPECT_TRUE(answers[0].is_error);
  EXPECT_THAT(answers[0].text, AnyOf(HasSubstr("not a regular file"), HasSubstr("special file"))) << answers[0].text;
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_FALSE(fs::exists(released)) << "the FIFO's writer was released: something opened it";
  ::kill(writer, SIGKILL);
  ::waitpid(writer, nullptr, 0);
}

DESKD_FOR_BOTH_DAEMONS(DeputyTest);

}  // namespace
}  // namespace deskd::security_testing
