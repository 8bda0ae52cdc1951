// One world per desk (issue 11), end to end: two desks under one `deskd serve`, in sibling
// folders. A desk sees nothing of another: neither its notes nor its hidden files, through
// its bash or its file tools, and it can write none of it. `readable_desks = ["y"]` lets x
// read y's folder — y's hidden paths stay hidden and y stays unwritable. Under a root deskd
// each desk runs as a uid of its own, never root's and never nobody's (65534), so that one
// desk's files are not another's by uid either.

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "e2e/daemon_fixture.h"
#include "e2e/turn_tools.h"

namespace deskd::e2e {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::Not;

// Under a root deskd and an unprivileged one (uid 4242, where every desk is deskd's uid and
// only the mounts keep desks apart).
constexpr uid_t kUnprivilegedUid = 4242;

class TwoDesksE2eTest : public ::testing::TestWithParam<bool> {
 protected:
  // Desks x (with `x_settings`) and y, y hiding its secret.txt. Their scripts are written
  // by script() before the start: x's calls name y's folder, known only now.
  std::unique_ptr<ServeDaemon> make_daemon(const std::string& x_settings) {
    auto daemon = std::make_unique<ServeDaemon>(std::initializer_list<DeskSetup>{
        DeskSetup{.name = "x", .script = kIdle, .settings = x_settings},
        DeskSetup{.name = "y", .script = kIdle, .hidden_paths = {"desks/y/secret.txt"}}});
    const std::string y = daemon->desk_directory("y");
    fs::create_directories(y + "/notes");
    fs::permissions(y + "/notes", fs::perms(0755));
    std::ofstream(y + "/notes/n.md") << note_ << "\n";
    std::ofstream(y + "/secret.txt") << secret_ << "\n";
    if (unprivileged()) daemon->run_as(kUnprivilegedUid);
    return daemon;
  }
  static void script(const ServeDaemon& daemon, const std::string& desk, const std::vector<ScriptedCall>& calls) {
    std::ofstream(daemon.script_path(desk)) << scripted_turn(calls);
  }
  static constexpr const char* kIdle = R"({"text": "idle"})" "\n";

  std::string y_directory(const ServeDaemon& daemon) const { return daemon.desk_directory("y"); }
  bool unprivileged() const { return GetParam(); }

  // x's six attempts on y: bash and the file tools, each reading y's note, reading y's
  // secret and writing into y's notes/.
  std::vector<ScriptedCall> attempts_on_y(const std::string& y) const {
    return {bash_call("cat ../y/notes/n.md"),
            bash_call("cat " + y + "/secret.txt"),
            bash_call("echo hi > " + y + "/notes/w.md"),
            {"read_file", {{"path", "../y/notes/n.md"}}},
            {"read_file", {{"path", y + "/secret.txt"}}},
            {"write_file", {{"path", y + "/notes/w.md"}, {"content", "hi\n"}}}};
  }

  // Refused, and (a refusal can still print) without `content` in what came back.
  static void expect_refused(const ToolOutcome& outcome, const std::string& content, const std::string& leak) {
    if (outcome.allowed()) ADD_FAILURE() << leak << describe(outcome);
    else EXPECT_THAT(outcome.text, Not(HasSubstr(content))) << leak << describe(outcome);
  }

  // Checks x's six outcomes: the note readable or not as `note_readable`, the rest refused.
  void expect_outcomes(const ServeDaemon& daemon, const std::vector<ToolOutcome>& outcomes, bool note_readable) {
    ASSERT_EQ(outcomes.size(), 6u) << "x's turn did not make its six calls";
    for (const size_t note : {0u, 3u}) {
      const ToolOutcome& outcome = outcomes[note];
      if (note_readable) {
        EXPECT_TRUE(outcome.allowed()) << "x cannot read y's notes although readable_desks names y: " << describe(outcome);
        EXPECT_THAT(outcome.text, HasSubstr(note_)) << describe(outcome);
      } else {
        expect_refused(outcome, note_, "x read y's notes: ");
      }
    }
    for (const size_t secret : {1u, 4u}) expect_refused(outcomes[secret], secret_, "x read y's hidden secret.txt: ");
    for (const size_t write : {2u, 5u})
      EXPECT_FALSE(outcomes[write].allowed()) << "x wrote into y's notes/: " << describe(outcomes[write]);
    EXPECT_FALSE(fs::exists(y_directory(daemon) + "/notes/w.md")) << "x's write landed in y's notes/";
  }

  std::string note_ = unique_text("y-note");
  std::string secret_ = unique_text("y-secret");
};

TEST_P(TwoDesksE2eTest, ADeskCanNeitherReadNorWriteAnotherDesk) {
  auto daemon = make_daemon("");
  script(*daemon, "x", attempts_on_y(y_directory(*daemon)));
  std::string why;
  ASSERT_TRUE(daemon->start({}, &why)) << why;
  expect_outcomes(*daemon, run_turn(*daemon, "x", "look at y"), false);
}

TEST_P(TwoDesksE2eTest, ReadableDesksLetsADeskReadAnothersNotesButNotItsSecretsNorWrite) {
  auto daemon = make_daemon("readable_desks = [\"y\"]\n");
  script(*daemon, "x", attempts_on_y(y_directory(*daemon)));
  std::string why;
  ASSERT_TRUE(daemon->start({}, &why)) << "a config with readable_desks must start:\n" << why;
  expect_outcomes(*daemon, run_turn(*daemon, "x", "look at y"), true);
}

// Under a root deskd each desk has a uid of its own; under an unprivileged one every desk
// runs as deskd's own uid, as the README says (the mounts alone keep them apart).
TEST_P(TwoDesksE2eTest, EachDeskRunsAsTheUidItsDeskdGivesIt) {
  if (::geteuid() != 0) GTEST_SKIP() << "the test needs root, to run deskd as root and as another uid";
  auto daemon = make_daemon("");
  for (const char* desk : {"x", "y"}) script(*daemon, desk, {bash_call("id -u")});
  std::string why;
  ASSERT_TRUE(daemon->start({}, &why)) << why;
  std::vector<long> uids;
  for (const char* desk : {"x", "y"}) {
    const auto outcomes = run_turn(*daemon, desk, "who are you");
    ASSERT_EQ(outcomes.size(), 1u) << desk;
    ASSERT_TRUE(outcomes[0].allowed()) << describe(outcomes[0]);
    uids.push_back(std::stol(outcomes[0].text));
    if (unprivileged()) {
      EXPECT_EQ(uids.back(), kUnprivilegedUid) << "desk " << desk << " of an unprivileged deskd";
      continue;
    }
    EXPECT_NE(uids.back(), 0) << "desk " << desk << " runs as root";
    EXPECT_NE(uids.back(), 65534) << "desk " << desk << " runs as nobody (65534), the uid every desk shares";
  }
  if (!unprivileged()) {
    EXPECT_NE(uids[0], uids[1]) << "desks x and y run as the same uid " << uids[0];
  }
}

INSTANTIATE_TEST_SUITE_P(Daemons, TwoDesksE2eTest, ::testing::Values(false, true),
                         [](const ::testing::TestParamInfo<bool>& parameter) {
                           return parameter.param ? "UnprivilegedDaemon" : "RootDaemon";
                         });

}  // namespace
}  // namespace deskd::e2e
