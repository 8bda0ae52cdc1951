// `deskd shell` as a person and a script use it: the real binary, fed on stdin, against a
// real desk in a real sandbox.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <fstream>

#include "e2e/deskd_process.h"

namespace deskd::e2e {
namespace {

namespace json = boost::json;
using ::testing::HasSubstr;
using ::testing::Not;

std::vector<std::string> shell_arguments(const TemporaryDesk& desk, std::vector<std::string> extra = {}) {
  std::vector<std::string> arguments = {"shell"};
  const auto desk_arguments = desk.arguments();
  arguments.insert(arguments.end(), desk_arguments.begin(), desk_arguments.end());
  arguments.insert(arguments.end(), extra.begin(), extra.end());
  return arguments;
}

constexpr const char* kTerminalEnded =
    "The terminal ended with this command, so the next command starts a fresh one; the folder and variables are "
    "reset.";

TEST(ShellEndToEndTest, APersonTypesCommandsAndSeesOutputAndStatus) {
  TemporaryDesk desk;
  DeskdProcess deskd(shell_arguments(desk));
  deskd.send("echo hi\nfalse\n\ncd scratch\npwd\nexit 3\npwd\ncat ../.env\n");
  deskd.close_input();
  const std::string output = deskd.read_rest();
  EXPECT_EQ(deskd.wait(), 0) << deskd.error_output();
  const std::string expected = "hi\n[exit 1]\n" + desk.directory() + "/scratch\n" + kTerminalEnded + "\n[exit 3]\n" +
                               desk.directory() + "\n";
  EXPECT_THAT(output, testing::StartsWith(expected));
  EXPECT_THAT(output, Not(HasSubstr(desk.secret())));
  EXPECT_THAT(output, testing::EndsWith("[exit 1]\n"));  // cat of the masked .env fails
}

TEST(ShellEndToEndTest, CommandsCanComeFromAFile) {
  TemporaryDesk desk;
  const std::string script = desk.root() + "/commands.sh";
  std::ofstream(script) << "x=41\necho $((x + 1))\n";
  DeskdProcess deskd(shell_arguments(desk), script);
  EXPECT_EQ(deskd.read_rest(), "42\n");
  EXPECT_EQ(deskd.wait(), 0) << deskd.error_output();
}

TEST(ShellEndToEndTest, EmptyInputEndsAtOnce) {
  TemporaryDesk desk;
  DeskdProcess deskd(shell_arguments(desk), "/dev/null");
  EXPECT_EQ(deskd.read_rest(), "");
  EXPECT_EQ(deskd.wait(), 0) << deskd.error_output();
}

class ShellJsonEndToEndTest : public ::testing::Test {
 protected:
  void SetUp() override { deskd_ = std::make_unique<DeskdProcess>(shell_arguments(desk_, {"--json"})); }

  json::object call(std::string_view line) {
    deskd_->send(std::string(line) + "\n");
    const auto reply = deskd_->read_line();
    EXPECT_TRUE(reply.has_value()) << deskd_->error_output();
    if (!reply) return {};
    std::error_code error;
    json::value parsed = json::parse(*reply, error);
    EXPECT_FALSE(error) << *reply;
    EXPECT_TRUE(parsed.is_object()) << *reply;
    if (!parsed.is_object()) return {};
    json::object object = parsed.as_object();
    EXPECT_EQ(object.size(), 4u) << *reply;
    EXPECT_TRUE(object.contains("content") && object.contains("is_error") && object.contains("exit_status") &&
                object.contains("truncated"))
        << *reply;
    return object;
  }
  json::object call(std::string_view tool, json::object input) {
    return call(json::serialize(json::object{{"tool", tool}, {"input", std::move(input)}}));
  }

  TemporaryDesk desk_;
  std::unique_ptr<DeskdProcess> deskd_;
};

TEST_F(ShellJsonEndToEndTest, AWholeSession) {
  EXPECT_EQ(call("bash", {{"command", "echo hi"}}),
            (json::object{{"content", "hi\n[exit status 0]"}, {"is_error", false}, {"exit_status", 0}, {"truncated", false}}));
  const json::object failed = call("bash", {{"command", "ls /nonexistent"}});
  EXPECT_EQ(failed.at("exit_status"), 2);
  EXPECT_EQ(failed.at("is_error"), false);

  const json::object secret = call("read_file", {{"path", ".env"}});
  EXPECT_EQ(secret.at("is_error"), true);
  EXPECT_THAT(std::string(secret.at("content").as_string()), HasSubstr("holds secrets and cannot be read."));
  EXPECT_TRUE(secret.at("exit_status").is_null());

  EXPECT_EQ(call("write_file", {{"path", "memory/facts.md"}, {"content", "the sky is blue\n"}}).at("is_error"), false);
  const json::object read = call("read_file", {{"path", "memory/facts.md"}});
  EXPECT_EQ(read.at("is_error"), false);
  EXPECT_THAT(std::string(read.at("content").as_string()), HasSubstr("the sky is blue"));

  const json::object listed = call("list_directory", {});
  EXPECT_THAT(std::string(listed.at("content").as_string()), HasSubstr("README.md"));

  deskd_->close_input();
  EXPECT_EQ(deskd_->read_rest(), "");
  EXPECT_EQ(deskd_->wait(), 0) << deskd_->error_output();
}

TEST_F(ShellJsonEndToEndTest, MalformedLinesGetAnErrorObjectAndTheLoopGoesOn) {
  for (std::string_view line : {std::string_view("not json"), std::string_view("[1, 2]"), std::string_view("{\"input\": {}}"),
                                std::string_view("{\"tool\": 5}"), std::string_view("{\"tool\": \"bash\", \"input\": \"ls\"}")}) {
    const json::object reply = call(line);
    EXPECT_EQ(reply.at("is_error"), true) << line;
    EXPECT_TRUE(reply.at("exit_status").is_null()) << line;
  }
  const json::object unknown = call("no_such_tool", {});
  EXPECT_EQ(unknown.at("is_error"), true);
  EXPECT_THAT(std::string(unknown.at("content").as_string()), HasSubstr("The tools are: bash,"));
  EXPECT_EQ(call("bash", {{"command", "echo still here"}}).at("content"), "still here\n[exit status 0]");
  deskd_->close_input();
  EXPECT_EQ(deskd_->wait(), 0) << deskd_->error_output();
}

TEST(ShellEndToEndUsageTest, BadUsageIsStatus2) {
  for (std::vector<std::string> arguments : {std::vector<std::string>{"shell"},
                                             std::vector<std::string>{"shell", "--desk", "/nonexistent/deskd"},
                                             std::vector<std::string>{"shell", "--desk", "/tmp", "--timeout", "x"},
                                             std::vector<std::string>{"shell", "--desk", "/tmp", "--bogus"}}) {
    DeskdProcess deskd(arguments);
    deskd.close_input();
    EXPECT_EQ(deskd.wait(), 2) << arguments.back();
    EXPECT_THAT(deskd.error_output(), HasSubstr("deskd shell: "));
  }
}

}  // namespace
}  // namespace deskd::e2e
