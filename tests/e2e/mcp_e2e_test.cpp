// `deskd mcp` as an MCP client sees it: the real binary over stdio, through whole sessions
// against a real desk in a real sandbox.

#include <signal.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <filesystem>
#include <thread>

#include "e2e/deskd_process.h"

namespace deskd::e2e {
namespace {

namespace json = boost::json;
using ::testing::HasSubstr;
using ::testing::Not;

class McpEndToEndTest : public ::testing::Test {
 protected:
  void SetUp() override { start("5"); }

  /// (Re)starts `deskd mcp` on the desk with this command timeout, and initializes the
  /// session with `protocol_version` unless it is empty.
  void start(const std::string& timeout_seconds, const std::string& protocol_version = "2025-11-25") {
    std::vector<std::string> arguments = {"mcp", "--timeout", timeout_seconds};
    const auto desk_arguments = desk_.arguments();
    arguments.insert(arguments.end(), desk_arguments.begin(), desk_arguments.end());
    deskd_ = std::make_unique<DeskdProcess>(arguments);
    if (protocol_version.empty()) return;
    const json::value initialized = ask(0, "initialize", {{"protocolVersion", protocol_version}});
    EXPECT_EQ(initialized.at("result").at("protocolVersion"), json::value(protocol_version))
        << json::serialize(initialized);
    deskd_->send(R"({"jsonrpc":"2.0","method":"notifications/initialized"})"
                 "\n");
  }

  json::value ask(json::value id, std::string_view method, json::object params = {}) {
    deskd_->send(json::serialize(
                     json::object{{"jsonrpc", "2.0"}, {"id", id}, {"method", method}, {"params", std::move(params)}}) +
                 "\n");
    return reply();
  }
  json::value reply() {
    const auto line = deskd_->read_line();
    EXPECT_TRUE(line.has_value()) << "no reply; stderr: " << deskd_->error_output();
    if (!line) return nullptr;
    std::error_code error;
    json::value parsed = json::parse(*line, error);
    EXPECT_FALSE(error) << "stdout carried something that is not JSON: " << *line;
    return parsed;
  }
  /// tools/call, returning {text, isError}.
  std::pair<std::string, bool> call(std::string_view tool, json::object arguments) {
    const json::value answer = ask(++next_id_, "tools/call", {{"name", tool}, {"arguments", std::move(arguments)}});
    if (!answer.is_object() || !answer.as_object().contains("result")) {
      ADD_FAILURE() << json::serialize(answer);
      return {"", true};
    }
    const json::value& result = answer.at("result");
    return {std::string(result.at("content").at(0).at("text").as_string()), result.at("isError").as_bool()};
  }

  TemporaryDesk desk_;
  std::unique_ptr<DeskdProcess> deskd_;
  int next_id_ = 100;
};

TEST_F(McpEndToEndTest, AWholeSession) {
  start("5", "");
  const json::value initialized = ask(1, "initialize",
                                      {{"protocolVersion", "2025-06-18"},
                                       {"capabilities", json::object{}},
                                       {"clientInfo", json::object{{"name", "e2e"}, {"version", "1"}}}});
  EXPECT_EQ(initialized.at("result").at("protocolVersion"), "2025-06-18");
  EXPECT_EQ(initialized.at("result").at("serverInfo").at("name"), "deskd");
  deskd_->send(R"({"jsonrpc":"2.0","method":"notifications/initialized"})"
               "\n");

  const json::value listed = ask(2, "tools/list");
  std::vector<std::string> names;
  for (const auto& tool : listed.at("result").at("tools").as_array()) names.emplace_back(tool.at("name").as_string());
  EXPECT_EQ(names, (std::vector<std::string>{"bash", "bash_background", "check_background", "bash_restart", "read_file",
                                             "write_file", "edit_file", "list_directory", "propose_file_change"}));

  auto [echoed, echo_failed] = call("bash", {{"command", "echo hi"}});
  EXPECT_EQ(echoed, "hi\n[exit status 0]");
  EXPECT_FALSE(echo_failed);

  auto [where, where_failed] = call("bash", {{"command", "pwd; cat .env; exit_code() { return 3; }; exit_code"}});
  EXPECT_THAT(where, HasSubstr(desk_.directory() + "\n"));
  EXPECT_THAT(where, HasSubstr("[exit status 3]"));
  EXPECT_THAT(where, Not(HasSubstr(desk_.secret())));
  EXPECT_FALSE(where_failed);

  auto [secret, secret_failed] = call("read_file", {{"path", ".env"}});
  EXPECT_TRUE(secret_failed);
  EXPECT_THAT(secret, HasSubstr("holds secrets and cannot be read."));
  EXPECT_THAT(secret, Not(HasSubstr(desk_.secret())));

  auto [written, write_failed] = call("write_file", {{"path", "notes/plan.md"}, {"content", "step one\nstep two\n"}});
  EXPECT_FALSE(write_failed) << written;
  auto [read, read_failed] = call("read_file", {{"path", "notes/plan.md"}});
  EXPECT_FALSE(read_failed) << read;
  EXPECT_THAT(read, HasSubstr("step one"));
  EXPECT_THAT(read, HasSubstr("step two"));
  auto [cat, cat_failed] = call("bash", {{"command", "cat notes/plan.md"}});
  EXPECT_EQ(cat, "step one\nstep two\n[exit status 0]");

  auto [refused, refused_failed] = call("write_file", {{"path", "README.md"}, {"content", "changed"}});
  EXPECT_TRUE(refused_failed);
  EXPECT_THAT(refused, HasSubstr("cannot be written"));

  const json::value discovered = ask(3, "server/discover");
  EXPECT_EQ(discovered.at("result").at("supportedVersions"), (json::array{"2026-07-28", "2025-11-25", "2025-06-18"}));
  EXPECT_EQ(ask(4, "ping").at("result"), json::object{});

  deskd_->close_input();
  EXPECT_EQ(deskd_->read_rest(), "");
  EXPECT_EQ(deskd_->wait(), 0) << deskd_->error_output();
}

TEST_F(McpEndToEndTest, BadInputIsAnsweredAndTheServerLivesOn) {
  deskd_->send("this is not json\n");
  EXPECT_EQ(reply().at("error").at("code"), -32700);
  deskd_->send("[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}]\n");
  EXPECT_EQ(reply().at("error").at("code"), -32600);
  EXPECT_EQ(ask(5, "no/such/method").at("error").at("code"), -32601);
  EXPECT_EQ(ask(6, "tools/call", {{"name", 42}}).at("error").at("code"), -32602);
  const json::value unknown = ask(8, "tools/call", {{"name", "no_such_tool"}, {"arguments", json::object{}}});
  EXPECT_EQ(unknown.at("error").at("code"), -32602);
  EXPECT_THAT(std::string(unknown.at("error").at("message").as_string()), HasSubstr("Unknown tool: no_such_tool."));
  // Under 2025-11-25 an argument the tool does not take is the tool's error (SEP-1303).
  const json::value extra =
      ask(9, "tools/call", {{"name", "bash"}, {"arguments", json::object{{"command", "true"}, {"cwd", "/"}}}});
  EXPECT_EQ(extra.at("result").at("isError"), true);
  EXPECT_THAT(std::string(extra.at("result").at("content").at(0).at("text").as_string()),
              HasSubstr("'cwd' is not an argument"));
  // A lone surrogate (text cut mid-emoji) is replaced, not refused; the command runs.
  deskd_->send(
      R"({"jsonrpc":"2.0","id":10,"method":"tools/call","params":{"name":"bash","arguments":{"command":"echo 'cut \ud83d'"}}})"
      "\n");
  EXPECT_EQ(reply().at("result").at("content").at(0).at("text"), "cut \xEF\xBF\xBD\n[exit status 0]");
  // Nesting past the limit is refused naming it, with the id.
  deskd_->send(R"({"jsonrpc":"2.0","id":11,"method":"tools/call","params":{"name":"bash","arguments":{"command":)" +
               std::string(10000, '[') + std::string(10000, ']') + "}}}\n");
  const json::value deep = reply();
  EXPECT_EQ(deep.at("id"), 11);
  EXPECT_THAT(std::string(deep.at("error").at("message").as_string()), HasSubstr("at most 64"));
  constexpr char kBinary[] = "\x00\xff\xfe garbage \x01\n";
  deskd_->send(std::string_view(kBinary, sizeof kBinary - 1));
  EXPECT_EQ(reply().at("error").at("code"), -32700);
  EXPECT_EQ(ask(7, "ping").at("id"), 7);
  deskd_->close_input();
  EXPECT_EQ(deskd_->wait(), 0) << deskd_->error_output();
}

// 2026-07-28: no initialize; each request names its revision in _meta.
TEST_F(McpEndToEndTest, TheModernRevisionServesRequestsWithoutASession) {
  start("5", "");
  const json::object meta{{"io.modelcontextprotocol/protocolVersion", "2026-07-28"},
                          {"io.modelcontextprotocol/clientCapabilities", json::object{}}};
  const json::value discovered = ask("d", "server/discover", {{"_meta", meta}});
  EXPECT_EQ(discovered.at("result").at("supportedVersions").at(0), "2026-07-28");
  const json::value listed = ask(1, "tools/list", {{"_meta", meta}});
  EXPECT_EQ(listed.at("result").at("resultType"), "complete");
  EXPECT_EQ(listed.at("result").at("tools").as_array().size(), 9u);
  const json::value ran = ask(
      2, "tools/call", {{"_meta", meta}, {"name", "bash"}, {"arguments", json::object{{"command", "echo modern"}}}});
  EXPECT_EQ(ran.at("result").at("content").at(0).at("text"), "modern\n[exit status 0]");
  EXPECT_EQ(ran.at("result").at("structuredContent").at("exit_status"), 0);
  json::object future = meta;
  future["io.modelcontextprotocol/protocolVersion"] = "2027-01-01";
  const json::value refused = ask(3, "tools/list", {{"_meta", future}});
  EXPECT_EQ(refused.at("error").at("code"), -32022);
  EXPECT_EQ(refused.at("error").at("data").at("requested"), "2027-01-01");
  deskd_->close_input();
  EXPECT_EQ(deskd_->wait(), 0) << deskd_->error_output();
}

TEST_F(McpEndToEndTest, ATimeoutIsAToolErrorAndTheTerminalComesBack) {
  start("0.5");
  auto [slow, slow_failed] = call("bash", {{"command", "sleep 30"}});
  EXPECT_TRUE(slow_failed);
  EXPECT_THAT(slow, HasSubstr("The command did not finish within 0.5 seconds."));
  auto [after, after_failed] = call("bash", {{"command", "echo back"}});
  EXPECT_EQ(after, "back\n[exit status 0]");
  deskd_->close_input();
  EXPECT_EQ(deskd_->wait(), 0);
}

// The command is really stopped: the file it would write after its sleep never appears.
TEST_F(McpEndToEndTest, ACancelledCommandIsStoppedAndGetsNoReply) {
  auto [made, made_failed] = call("bash", {{"command", "mkdir -p scratch && touch scratch/early"}});
  ASSERT_FALSE(made_failed) << made;
  ASSERT_TRUE(std::filesystem::exists(desk_.directory() + "/scratch/early")) << "the check below would pass vacuously";
  deskd_->send(
      R"({"jsonrpc":"2.0","id":"slow","method":"tools/call","params":{"name":"bash","arguments":{"command":"sleep 1.5; touch scratch/late"}}})"
      "\n");
  std::this_thread::sleep_for(400ms);  // let the command start
  deskd_->send(R"({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"slow","reason":"e2e"}})"
               "\n");
  EXPECT_EQ(ask(20, "ping").at("id"), 20) << "the cancelled call must get no reply";
  std::this_thread::sleep_for(2s);
  EXPECT_FALSE(std::filesystem::exists(desk_.directory() + "/scratch/late")) << "the command ran on";
  auto [after, after_failed] = call("bash", {{"command", "echo back"}});
  EXPECT_EQ(after, "back\n[exit status 0]");
  deskd_->close_input();
  EXPECT_EQ(deskd_->read_rest(), "");
  EXPECT_EQ(deskd_->wait(), 0) << deskd_->error_output();
}

TEST_F(McpEndToEndTest, EndOfInputStopsTheRunningCommandAtOnce) {
  start("60");
  ASSERT_FALSE(call("bash", {{"command", "mkdir -p scratch"}}).second);
  deskd_->send(
      R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"bash","arguments":{"command":"sleep 3; touch scratch/late"}}})"
      "\n");
  std::this_thread::sleep_for(400ms);
  const auto closed = std::chrono::steady_clock::now();
  deskd_->close_input();
  EXPECT_EQ(deskd_->wait(10s), 0) << deskd_->error_output();
  EXPECT_LT(std::chrono::steady_clock::now() - closed, 2s) << "deskd waited for the command";
  EXPECT_EQ(deskd_->read_rest(), "") << "a call stopped at the end of input gets no reply";
  std::this_thread::sleep_for(3s);
  EXPECT_FALSE(std::filesystem::exists(desk_.directory() + "/scratch/late")) << "the command ran on";
}

TEST_F(McpEndToEndTest, SigtermDuringACommandEndsCleanly) {
  deskd_->send(
      R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"bash","arguments":{"command":"sleep 60"}}})"
      "\n");
  std::this_thread::sleep_for(500ms);  // let the command start
  deskd_->signal(SIGTERM);
  const json::value answer = reply();  // the call is answered, not dropped
  EXPECT_EQ(answer.at("id"), 1);
  EXPECT_EQ(answer.at("result").at("isError"), true);
  EXPECT_EQ(deskd_->wait(10s), 128 + SIGTERM);
}

TEST(McpEndToEndUsageTest, WithoutADeskItRefusesWithStatus2) {
  DeskdProcess deskd({"mcp"});
  deskd.close_input();
  EXPECT_EQ(deskd.wait(), 2);
  EXPECT_THAT(deskd.error_output(), HasSubstr("--desk DIR is required."));
  EXPECT_EQ(deskd.read_rest(), "") << "nothing but MCP messages may go to stdout";
}

TEST(McpEndToEndUsageTest, HelpGoesToStdout) {
  DeskdProcess deskd({"mcp", "--help"});
  // Written by the parser: its usage line, then every option with its value's name.
  const std::string help = deskd.read_rest();
  EXPECT_THAT(help, HasSubstr("usage: deskd mcp [OPTIONS]"));
  EXPECT_THAT(help, HasSubstr("--desk DIR"));
  EXPECT_THAT(help, HasSubstr("--progress-interval SECONDS"));
  EXPECT_EQ(deskd.wait(), 0);
}

}  // namespace
}  // namespace deskd::e2e
