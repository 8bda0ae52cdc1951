// deskd acting FOR a desk uses no more than the desk's rights, or the owner's (issue 26):
// a proposal may name only the desk's own files, an accepted one is written with the
// owner's rights, never root's; an ad-hoc command refuses a served desk's folder; and two
// deskd with different state folders never hand out the same desk uid. The built binaries
// as processes, a root deskd (the test's own identity).

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "e2e/daemon_fixture.h"
#include "e2e/deskd_process.h"
#include "e2e/serve_test_support.h"

namespace deskd::e2e {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::Not;

// Two owners that are nobody on this host: the desk folder's and a file's.
constexpr uid_t kFolderOwner = 23456;
constexpr uid_t kFileOwner = 34567;

std::string proposing(const std::string& path, const std::string& content) {
  return R"({"steps": [{"tool_calls": [{"name": "propose_file_change", "input": {"path": ")" + path +
         R"(", "content": ")" + content + R"(", "reason": "needed"}}]}, {"text": "proposed"}]})" "\n";
}

std::string newest_open_proposal(const ServeDaemon& daemon, const std::string& desk) {
  const auto reply = parsed(daemon.deskctl({"--json", "proposals", desk}).output);
  std::string id;
  if (const auto* proposals = reply.if_contains("proposals"); proposals != nullptr && proposals->is_array()) {
    for (const auto& proposal : proposals->as_array()) {
      if (field(proposal.as_object(), "status") == "open") id = field(proposal.as_object(), "id");
    }
  }
  return id;
}

uid_t owner_of(const std::string& path) {
  struct stat status {};
  return ::lstat(path.c_str(), &status) == 0 ? status.st_uid : static_cast<uid_t>(-1);
}

class DeputyE2eTest : public ServeE2eTest {
 protected:
  void SetUp() override {
    if (::geteuid() != 0) GTEST_SKIP() << "the deputy checks of a root deskd need root";
  }
};

TEST_F(DeputyE2eTest, AProposalOutsideTheDeskFolderIsRefusedAndNothingIsStored) {
  const std::string outside = "/var/tmp/deskd-deputy-" + std::to_string(::getpid());
  fs::create_directories(outside);
  ::chmod(outside.c_str(), 0700);
  ServeDaemon daemon({{"one", proposing(outside + "/profile.sh", "echo owned") + proposing("../../deskd.toml", "x")}});
  ASSERT_NO_FATAL_FAILURE(start(daemon));

  const auto first = daemon.deskctl({"ask", "one", "propose outside"});
  EXPECT_THAT(first.output, HasSubstr("is outside your desk folder")) << describe(first);
  const auto second = daemon.deskctl({"ask", "one", "propose the config"});
  EXPECT_THAT(second.output, HasSubstr("is outside your desk folder")) << describe(second);
  EXPECT_TRUE(newest_open_proposal(daemon, "one").empty());
  EXPECT_FALSE(fs::exists(outside + "/profile.sh"));
  fs::remove_all(outside);
}

TEST_F(DeputyE2eTest, AnUnreadableFileCannotBeProposedSoTheLineCountsTellNothing) {
  ServeDaemon daemon({{"one", proposing("pin.txt", "000\\n") + proposing("pin.txt", "999\\n")}});
  const std::string pin = daemon.desk_directory("one") + "/pin.txt";
  std::ofstream(pin) << "417\n";
  ::chmod(pin.c_str(), 0600);  // root's: the desk's uid cannot read it
  ASSERT_NO_FATAL_FAILURE(start(daemon));
  for (const char* question : {"guess 000", "guess 999"}) {
    const auto answer = daemon.deskctl({"ask", "one", question});
    EXPECT_THAT(answer.output, Not(HasSubstr("lines"))) << describe(answer);
    EXPECT_THAT(answer.output, Not(HasSubstr("Proposal p-"))) << describe(answer);
  }
  EXPECT_TRUE(newest_open_proposal(daemon, "one").empty());
}

TEST_F(DeputyE2eTest, AcceptWritesWithTheOwnersRightsNeverRoots) {
  ServeDaemon daemon({{"one", proposing("fresh.md", "new\\n") + proposing("theirs.md", "changed\\n") +
                                  proposing("locked/inside.md", "x\\n")}});
  const std::string desk = daemon.desk_directory("one");
  std::ofstream(desk + "/theirs.md") << "theirs\n";
  ASSERT_EQ(::chown((desk + "/theirs.md").c_str(), kFileOwner, kFileOwner), 0);
  fs::create_directories(desk + "/locked");
  ::chmod((desk + "/locked").c_str(), 0755);  // root's: its owner alone may write in it
  ASSERT_EQ(::chown(desk.c_str(), kFolderOwner, kFolderOwner), 0);
  ASSERT_NO_FATAL_FAILURE(start(daemon));

  ASSERT_EQ(daemon.deskctl({"ask", "one", "propose a new file"}).exit_code, 0);
  const std::string fresh = newest_open_proposal(daemon, "one");
  ASSERT_FALSE(fresh.empty());
  const auto accepted = daemon.deskctl({"accept", fresh});
  EXPECT_EQ(accepted.exit_code, 0) << describe(accepted);
  EXPECT_EQ(file_text(desk + "/fresh.md"), "new\n");
  EXPECT_EQ(owner_of(desk + "/fresh.md"), kFolderOwner) << "a new file is the desk folder owner's";

  ASSERT_EQ(daemon.deskctl({"ask", "one", "propose a change"}).exit_code, 0);
  const std::string change = newest_open_proposal(daemon, "one");
  ASSERT_FALSE(change.empty());
  const auto listed = daemon.deskctl({"proposals", "one"});
  EXPECT_THAT(listed.output, HasSubstr("--- a/theirs.md")) << "the diff's labels are desk-relative";
  EXPECT_EQ(daemon.deskctl({"accept", change}).exit_code, 0);
  EXPECT_EQ(file_text(desk + "/theirs.md"), "changed\n");
  EXPECT_EQ(owner_of(desk + "/theirs.md"), kFileOwner) << "a replaced file keeps its owner";

  // A folder of root's inside the desk: the folder owner may not write there, so neither
  // may the accept, though deskd itself is root.
  ASSERT_EQ(daemon.deskctl({"ask", "one", "propose inside root's folder"}).exit_code, 0);
  const std::string locked = newest_open_proposal(daemon, "one");
  ASSERT_FALSE(locked.empty());
  const auto refused = daemon.deskctl({"accept", locked});
  EXPECT_NE(refused.exit_code, 0) << describe(refused);
  EXPECT_FALSE(fs::exists(desk + "/locked/inside.md"));
}

TEST_F(DeputyE2eTest, AnAdHocSandboxOnAServedDesksFolderIsRefused) {
  ServeDaemon daemon({{"one", R"({"steps": [{"text": "hi"}]})" "\n"}});
  ASSERT_NO_FATAL_FAILURE(start(daemon));
  for (const std::string& folder : {daemon.desk_directory("one"), daemon.desk_directory("one") + "/notes"}) {
    DeskdProcess sandbox({"sandbox", "--desk", folder, "--", "/bin/true"});
    EXPECT_EQ(sandbox.wait(), 125) << sandbox.error_output();
    EXPECT_THAT(sandbox.error_output(), HasSubstr("belongs to desk 'one'"));
  }
}

TEST_F(DeputyE2eTest, TwoDeskdWithDifferentStateFoldersNeverShareADeskUid) {
  ServeDaemon first({{"one", R"({"steps": [{"text": "hi"}]})" "\n"}});
  ServeDaemon second({{"one", R"({"steps": [{"text": "hi"}]})" "\n"}});
  ASSERT_NO_FATAL_FAILURE(start(first));
  ASSERT_NO_FATAL_FAILURE(start(second));
  const std::string ids_one = file_text(first.folder() + "/state/desk-ids");
  const std::string ids_two = file_text(second.folder() + "/state/desk-ids");
  const auto uid_in = [](const std::string& text) {
    const auto at = text.find("\none ");
    return at == std::string::npos ? std::string() : text.substr(at + 5, text.find('\n', at + 1) - at - 5);
  };
  ASSERT_FALSE(uid_in(ids_one).empty()) << ids_one;
  ASSERT_FALSE(uid_in(ids_two).empty()) << ids_two;
  EXPECT_NE(uid_in(ids_one), uid_in(ids_two));
}

// The ids of all a root deskd's desks are chosen at once (issue 27): a desk whose id another
// deskd's desk holds is kept stopped, saying why, and the others start with ids of their own.
TEST_F(DeputyE2eTest, ADeskWhoseUidAnotherDeskdHoldsIsKeptStoppedAndTheOthersStart) {
  const auto uid_in = [](const std::string& text, const std::string& desk) {
    const auto at = text.find("\n" + desk + " ");
    if (at == std::string::npos) return std::string();
    const auto from = at + desk.size() + 2;
    return text.substr(from, text.find('\n', from) - from);
  };
  ServeDaemon first({{"one", R"({"steps": [{"text": "hi"}]})" "\n"}});
  ASSERT_NO_FATAL_FAILURE(start(first));
  const std::string held = uid_in(file_text(first.folder() + "/state/desk-ids"), "one");
  ASSERT_FALSE(held.empty());

  ServeDaemon second({{"one", R"({"steps": [{"text": "hi"}]})" "\n"},
                      {"two", R"({"steps": [{"text": "hi"}]})" "\n"},
                      {"three", R"({"steps": [{"text": "hi"}]})" "\n"}});
  // Its state says "two" has the first deskd's id (copied state, say).
  fs::create_directories(second.folder() + "/state");
  std::ofstream(second.folder() + "/state/desk-ids") << "# copied\ntwo " << held << "\n";
  ASSERT_NO_FATAL_FAILURE(start(second));
  for (const auto& [name, state] : second.desk_states()) EXPECT_EQ(state, name == "two" ? "stopped" : "idle") << name;
  std::string why;
  for (const auto& event : json_lines(second.journal_path("two"))) {
    if (event_kind(event) == "DESK_FAILED") why = event_data(event, "error");
  }
  EXPECT_THAT(why, HasSubstr("choosing the desk's uid: The uid " + held +
                             " of desk 'two' is also given to desk 'one' of the deskd whose state folder is " +
                             first.folder() + "/state"));
  const std::string ids = file_text(second.folder() + "/state/desk-ids");
  EXPECT_EQ(uid_in(ids, "two"), held) << ids;
  const std::string one = uid_in(ids, "one");
  const std::string three = uid_in(ids, "three");
  ASSERT_FALSE(one.empty()) << ids;
  ASSERT_FALSE(three.empty()) << ids;
  EXPECT_NE(one, held);
  EXPECT_NE(three, held);
  EXPECT_NE(one, three);
  const auto answered = second.deskctl({"ask", "three", "hello"});
  EXPECT_EQ(answered.exit_code, 0) << describe(answered);
  EXPECT_THAT(answered.output, HasSubstr("hi")) << describe(answered);
}

// An unprivileged deskd would hand its supplementary groups to every desk (setgroups is
// denied in a desk's user namespace): it refuses to start, naming them and the way out.
TEST_F(DeputyE2eTest, AnUnprivilegedDeskdWithSupplementaryGroupsRefusesToStart) {
  constexpr uid_t kUser = 4261;
  constexpr gid_t kExtraGroup = 4262;
  ServeDaemon daemon({{"one", R"({"steps": [{"text": "hi"}]})" "\n"}});
  daemon.run_as(kUser);
  const std::string command = "setpriv --reuid=" + std::to_string(kUser) + " --regid=" + std::to_string(kUser) +
                              " --groups=" + std::to_string(kExtraGroup) + " " + deskd_binary() + " serve --config " +
                              daemon.config_path() + " 2>&1";
  FILE* pipe = ::popen(command.c_str(), "r");
  ASSERT_NE(pipe, nullptr);
  std::string output;
  char buffer[4096];
  for (std::size_t count; (count = std::fread(buffer, 1, sizeof buffer, pipe)) > 0;) output.append(buffer, count);
  const int status = ::pclose(pipe);
  ASSERT_TRUE(WIFEXITED(status)) << output;
  EXPECT_EQ(WEXITSTATUS(status), 1) << output;
  EXPECT_THAT(output, HasSubstr("supplementary group " + std::to_string(kExtraGroup))) << output;
  EXPECT_THAT(output, HasSubstr("allow_supplementary_groups = true"));
  EXPECT_FALSE(fs::exists(daemon.socket_path())) << "deskd listened before refusing";
}

}  // namespace
}  // namespace deskd::e2e
