// `deskd run` as a process: a desk turn on a script model, and the journal's promise —
// a deskd killed in the middle of a turn re-delivers that trigger when it starts again.

#include <signal.h>

#include <filesystem>
#include <fstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "e2e/deskd_process.h"

namespace deskd::e2e {
namespace {

using ::testing::HasSubstr;
namespace fs = std::filesystem;

std::string write_script(const std::string& folder, const std::string& text) {
  const std::string path = folder + "/script.jsonl";
  std::ofstream(path) << text;
  return path;
}

std::vector<std::string> run_arguments(const TemporaryDesk& desk, const std::string& script, const std::string& message) {
  std::vector<std::string> arguments = {"run"};
  for (const auto& argument : desk.arguments()) arguments.push_back(argument);
  for (const auto& argument : {std::string("--script"), script, std::string("--state"), desk.root() + "/state", message}) {
    arguments.push_back(argument);
  }
  return arguments;
}

TEST(RunE2eTest, RunsATurnThroughTheRealTools) {
  TemporaryDesk desk;
  const auto script = write_script(desk.root(), R"({"steps": [{"tool_calls": [{"name": "bash", "input": {"command": "echo from-the-sandbox > notes/run.txt; cat notes/run.txt"}}]}, {"text": "written"}]})" "\n");
  DeskdProcess deskd(run_arguments(desk, script, "write a note"));
  const std::string output = deskd.read_rest();
  EXPECT_EQ(deskd.wait(), 0) << output << deskd.error_output();
  EXPECT_THAT(output, HasSubstr("from-the-sandbox"));
  EXPECT_THAT(output, HasSubstr("turn finished: written"));
  EXPECT_TRUE(fs::exists(desk.directory() + "/notes/run.txt"));
}

TEST(RunE2eTest, ASlashCommandIsAnsweredAndRunExits) {
  TemporaryDesk desk;
  const auto script = write_script(desk.root(), R"({"text": "never asked"})"
                                                "\n");
  // A /command is answered without a turn: its answer is the end deskd run waits for.
  DeskdProcess deskd(run_arguments(desk, script, "/help"));
  const std::string output = deskd.read_rest();
  EXPECT_EQ(deskd.wait(), 0) << output << deskd.error_output();
  EXPECT_THAT(output, HasSubstr("/status")) << output;
  EXPECT_THAT(output, ::testing::Not(HasSubstr("never asked"))) << output;
}

TEST(RunE2eTest, AKilledDeskdRedeliversTheTriggerItWasWorkingOn) {
  TemporaryDesk desk;
  // The first turn takes long; the second (the re-delivery) finishes at once.
  const auto script = write_script(desk.root(),
                                   R"({"steps": [{"tool_calls": [{"name": "bash", "input": {"command": "echo started; sleep 60"}}]}, {"text": "slow"}]})" "\n");
  {
    DeskdProcess deskd(run_arguments(desk, script, "first message"));
    bool started = false;
    while (auto line = deskd.read_line()) {
      // The tool call's line: the turn is inside its long bash command.
      if (line->find("> bash echo started; sleep 60") != std::string::npos) {
        started = true;
        break;
      }
    }
    ASSERT_TRUE(started) << deskd.error_output();
    deskd.signal(SIGKILL);
    deskd.wait();
  }
  const auto quick = write_script(desk.root(), R"({"text": "redelivered and done"})" "\n" R"({"text": "second done"})" "\n");
  DeskdProcess again(run_arguments(desk, quick, "second message"));
  const std::string output = again.read_rest();
  // Two turns ran: the re-delivered first message, then the new one, and deskd run waited
  // for the end of its own message's turn, not the first turn's.
  EXPECT_EQ(again.wait(), 0) << output << again.error_output();
  EXPECT_THAT(output, HasSubstr("turn finished: redelivered and done")) << output << again.error_output();
  EXPECT_THAT(output, HasSubstr("turn finished: second done")) << output;
}

}  // namespace
}  // namespace deskd::e2e
