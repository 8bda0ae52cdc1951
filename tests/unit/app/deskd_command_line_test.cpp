// deskd-full's parser as a person meets it: values stay with their options, words with
// their command, and bad usage is exit status 2.

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "runner/app/deskd_command.h"

namespace deskd::app {
namespace {

namespace fs = std::filesystem;

class DeskdCommandLineTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/deskd-command-line-XXXXXX";
    ASSERT_NE(::mkdtemp(pattern), nullptr);
    desk_ = pattern;
    std::ofstream(desk_ / "secret") << "s";
  }
  void TearDown() override { fs::remove_all(desk_); }
  fs::path desk_;
};

TEST_F(DeskdCommandLineTest, ARepeatableOptionTakesOneValueAndLeavesTheWordsAfterIt) {
  const std::string hidden = (desk_ / "secret").string();
  EXPECT_EQ(run_deskd_command_line({"policy", "--desk", desk_.string(), "--hide", hidden, "read", "notes/a"}), 0);
  EXPECT_EQ(run_deskd_command_line({"policy", "--desk", desk_.string(), "--hide", hidden, "read", "secret"}), 1);
  // Options may also follow the words.
  EXPECT_EQ(run_deskd_command_line({"policy", "read", "secret", "--desk", desk_.string(), "--hide", hidden}), 1);
}

TEST_F(DeskdCommandLineTest, BadUsageIsStatus2) {
  EXPECT_EQ(run_deskd_command_line({}), 2);
  EXPECT_EQ(run_deskd_command_line({"no-such-command"}), 2);
  EXPECT_EQ(run_deskd_command_line({"policy", "--desk", desk_.string(), "--frob", "read", "x"}), 2);
  EXPECT_EQ(run_deskd_command_line({"policy", "--desk", desk_.string(), "peek", "x"}), 2);
  EXPECT_EQ(run_deskd_command_line({"policy", "--desk", desk_.string(), "read"}), 2);
  EXPECT_EQ(run_deskd_command_line({"run", "--desk", desk_.string(), "--timeout", "soon", "hello"}), 2);
  EXPECT_EQ(run_deskd_command_line({"run", "--desk", desk_.string(), "--net", "everywhere", "hello"}), 2);
  EXPECT_EQ(run_deskd_command_line({"shell", "--allow", "*.com"}), 2);
  EXPECT_EQ(run_deskd_command_line({"mcp", "--progress-interval", "0"}), 2);
  EXPECT_EQ(run_deskd_command_line({"serve"}), 2);
  EXPECT_EQ(run_deskd_command_line({"doctor", "--config"}), 2);
}

TEST_F(DeskdCommandLineTest, HelpAndVersionAreStatus0) {
  for (const char* command : {"check", "doctor", "mcp", "policy", "run", "serve", "shell"}) {
    ::testing::internal::CaptureStdout();
    EXPECT_EQ(run_deskd_command_line({command, "--help"}), 0) << command;
    const std::string help = ::testing::internal::GetCapturedStdout();
    EXPECT_NE(help.find(std::string("usage: deskd ") + command), std::string::npos) << help;
  }
  EXPECT_EQ(run_deskd_command_line({"--help"}), 0);
  EXPECT_EQ(run_deskd_command_line({"help"}), 0);
  EXPECT_EQ(run_deskd_command_line({"--version"}), 0);
}

}  // namespace
}  // namespace deskd::app
