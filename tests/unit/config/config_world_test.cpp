// One world per desk: desk folders that would break confinement are refused (system
// folders, unreachable ones, shared or nested ones, ones holding deskd's own files), and
// desks are strangers: each hides the others' folders and hidden paths unless it may read
// another desk.

#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "runner/config/config.h"
#include "runner/config/config_confinement.h"
#include "unit/config/config_test_support.h"

namespace deskd::app {
namespace {

using testing::ConfigTest;
using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::IsSupersetOf;
using ::testing::Not;

namespace fs = std::filesystem;

std::string desk_at(const std::string& name, const std::string& directory) {
  return "[[desk]]\nname = \"" + name + "\"\ndirectory = \"" + directory + "\"\n";
}

// A desk folder under a fresh folder of `parent` whose mode is 0700; removed at the end.
class PrivateFolder {
 public:
  explicit PrivateFolder(const std::string& parent) {
    std::string pattern = parent + "/deskd-world-test-XXXXXX";
    if (::mkdtemp(pattern.data()) == nullptr) return;
    folder_ = fs::canonical(pattern);
    fs::create_directories(folder_ / "desk");
  }
  ~PrivateFolder() {
    std::error_code ignored;
    if (!folder_.empty()) fs::remove_all(folder_, ignored);
  }
  bool made() const { return !folder_.empty(); }
  const fs::path& folder() const { return folder_; }
  fs::path desk() const { return folder_ / "desk"; }

 private:
  fs::path folder_;
};

TEST(ConfinementRulesTest, TheShownSystemFoldersAndWhatLiesInsideThem) {
  for (const char* inside : {"/usr", "/usr/bin", "/bin", "/sbin/x", "/lib", "/lib64/ld.so", "/libx32", "/etc/ssl",
                             "/opt", "/opt/private/desk"}) {
    EXPECT_TRUE(is_inside_shown_system_folder(inside)) << inside;
  }
  for (const char* outside : {"/", "/home/a", "/root", "/tmp/x", "/var/lib", "/srv", "/usrx", "/optimal"}) {
    EXPECT_FALSE(is_inside_shown_system_folder(outside)) << outside;
  }
}

TEST(ConfinementRulesTest, WhereADeskFolderMayLie) {
  for (const char* refused : {"/", "/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/boot",
                              "/dev", "/proc", "/sys", "/run", "/var/run", "/opt", "/home", "/root", "/var", "/srv",
                              "/tmp", "/mnt", "/media", "/usr/local/desk", "/etc/desk", "/lib/x", "/boot/x",
                              "/dev/shm/x", "/proc/1", "/sys/fs", "/run/user/1000/desk", "/var/run/desk"}) {
    EXPECT_FALSE(check_desk_folder_placement(refused).ok()) << refused;
  }
  for (const char* allowed : {"/opt/desks/x", "/srv/desks/x", "/home/trader/desk", "/root/desk", "/tmp/x",
                              "/var/lib/desks/x", "/mnt/data/desk"}) {
    EXPECT_TRUE(check_desk_folder_placement(allowed).ok()) << allowed;
  }
}

TEST(ConfinementRulesTest, InTheFullViewEveryAncestorMustLetTheSandboxSearchIt) {
  // mkdtemp makes a 0700 folder: the minimal view builds its own way to the desk past it,
  // the full view shows the host's folder on the way, which the desk's uid cannot search.
  char pattern[] = "/tmp/deskd-full-view-XXXXXX";
  ASSERT_NE(::mkdtemp(pattern), nullptr);
  const std::filesystem::path desk = std::filesystem::path(pattern) / "desk";
  std::filesystem::create_directory(desk);
  EXPECT_TRUE(check_desk_folder_reachable(desk, 0, sandbox::HostView::minimal).ok());
  const auto refused = check_desk_folder_reachable(desk, 0, sandbox::HostView::full);
  ASSERT_FALSE(refused.ok());
  EXPECT_THAT(refused.error().what, ::testing::HasSubstr(std::string("its ancestor ") + pattern + " has mode 0700"));
  std::filesystem::remove_all(pattern);
}

TEST(ConfinementRulesTest, AnAncestorInAShownSystemFolderMustLetTheSandboxSearchIt) {
  PrivateFolder opt("/opt");
  if (!opt.made()) {
    GTEST_SKIP() << "cannot create a folder in /opt as uid " << ::geteuid();
  }
  ASSERT_EQ(::chown(opt.folder().c_str(), 4242, 4242), 0) << "needs root to give the folder away";
  // Another user's 0700 folder blocks every desk; its owner's rootless desks pass.
  const auto refused = check_desk_folder_reachable(opt.desk(), 1000);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().what, "the desk folder " + opt.desk().native() +
                                      " cannot be reached by the desk's sandbox: its ancestor " +
                                      opt.folder().native() +
                                      " has mode 0700, which lets no other user search it; move the desk or run "
                                      "`chmod o+x " + opt.folder().native() + "`");
  EXPECT_TRUE(check_desk_folder_reachable(opt.desk(), 4242).ok());
  ASSERT_EQ(::chmod(opt.folder().c_str(), 0701), 0);
  EXPECT_TRUE(check_desk_folder_reachable(opt.desk(), 1000).ok());
  // Under a root deskd a desk runs as its own uid: root's 0700 folder blocks it.
  ASSERT_EQ(::chown(opt.folder().c_str(), 0, 0), 0);
  ASSERT_EQ(::chmod(opt.folder().c_str(), 0700), 0);
  EXPECT_FALSE(check_desk_folder_reachable(opt.desk(), 0).ok());
}

TEST_F(ConfigTest, ADeskFolderThatIsTheRootOrASystemFolderIsRefused) {
  EXPECT_THAT(problems(parse(desk_at("alpha", "/") + desk_at("beta", "/etc"))),
              ElementsAre("3:13: desk 'alpha': the desk folder / is the root of the host; a desk needs a folder of "
                          "its own, for example under /srv or /home",
                          "6:13: desk 'beta': the desk folder /etc is a system folder; a desk needs a folder of its "
                          "own, for example under /srv or /home"));
}

TEST_F(ConfigTest, ADeskFolderThatIsAFolderTheHostSharesIsRefused) {
  EXPECT_THAT(problems(parse(desk_at("alpha", "/tmp") + desk_at("beta", "/home"))),
              ElementsAre("3:13: desk 'alpha': the desk folder /tmp is a folder the whole host shares; give the "
                          "desk a folder of its own inside it, such as /tmp/desks/NAME",
                          "6:13: desk 'beta': the desk folder /home is a folder the whole host shares; give the "
                          "desk a folder of its own inside it, such as /home/desks/NAME"));
}

TEST_F(ConfigTest, ADeskFolderInsideTheSystemIsRefusedAlsoThroughALink) {
  fs::create_directory_symlink("/usr/share", root_ / "shared-link");
  EXPECT_THAT(problems(parse(desk_at("alpha", "shared-link"))),
              ElementsAre("3:13: desk 'alpha': the desk folder /usr/share lies inside the system folder /usr, which "
                          "the sandbox shows read-only to every desk or not at all; put the desk in a folder of its "
                          "own, for example under /srv or /home"));
}

TEST_F(ConfigTest, TwoDesksInTheSameFolderAreRefused) {
  fs::create_directory_symlink(root_ / "desks/alpha", root_ / "alpha-link");
  EXPECT_THAT(problems(parse(desk_at("alpha", "desks/alpha") + desk_at("beta", "alpha-link"))),
              ElementsAre("6:13: the folder of desk 'beta', " + (root_ / "desks/alpha").native() +
                          ", is the folder of desk 'alpha' too (line 3); desks are strangers, each needs a folder "
                          "of its own"));
}

TEST_F(ConfigTest, NestedDeskFoldersAreRefusedEitherWay) {
  fs::create_directories(root_ / "desks/alpha/scratch/inner");
  EXPECT_THAT(problems(parse(desk_at("alpha", "desks/alpha") + desk_at("inner", "desks/alpha/scratch/inner"))),
              ElementsAre("6:13: the folder of desk 'inner', " + (root_ / "desks/alpha/scratch/inner").native() +
                          ", lies inside the folder of desk 'alpha', " + (root_ / "desks/alpha").native() +
                          " (line 3); desks are strangers, so no desk's folder may hold another's"));
  EXPECT_THAT(problems(parse(desk_at("inner", "desks/alpha/scratch/inner") + desk_at("alpha", "desks/alpha"))),
              ElementsAre("6:13: the folder of desk 'alpha', " + (root_ / "desks/alpha").native() +
                          ", holds the folder of desk 'inner', " + (root_ / "desks/alpha/scratch/inner").native() +
                          " (line 3); desks are strangers, so no desk's folder may hold another's"));
}

TEST_F(ConfigTest, AStateFolderInsideADeskFolderIsRefused) {
  EXPECT_THAT(problems(parse("[runner]\nstate_folder = \"desks/alpha/state\"\n" + desk_at("alpha", "desks/alpha"))),
              ElementsAre("5:13: the folder of desk 'alpha', " + (root_ / "desks/alpha").native() +
                          ", holds deskd's state folder " + (root_ / "desks/alpha/state").native() +
                          " (line 2); deskd's own files never lie in a desk's world, so move the state folder out "
                          "of every desk folder"));
}

TEST_F(ConfigTest, ASocketInsideADeskFolderIsRefused) {
  EXPECT_THAT(problems(parse("[runner]\nsocket = \"desks/beta/deskd.sock\"\n" + desk_at("alpha", "desks/alpha") +
                             desk_at("beta", "desks/beta"))),
              ElementsAre("8:13: the folder of desk 'beta', " + (root_ / "desks/beta").native() +
                          ", holds deskd's socket " + (root_ / "desks/beta/deskd.sock").native() +
                          " (line 2); deskd's own files never lie in a desk's world, so move the socket out of "
                          "every desk folder"));
}

TEST_F(ConfigTest, ADeskTheSandboxCannotReachIsRefused) {
  PrivateFolder opt("/opt");
  if (!opt.made()) {
    GTEST_SKIP() << "cannot create a folder in /opt as uid " << ::geteuid();
  }
  // Owned by someone else, or by root under a root deskd: either way the desk cannot pass.
  if (::geteuid() != 0) {
    ASSERT_EQ(::chown(opt.folder().c_str(), 4242, 4242), 0);
  }
  EXPECT_THAT(problems(parse(desk_at("alpha", opt.desk().native()))),
              ElementsAre("3:13: desk 'alpha': the desk folder " + opt.desk().native() +
                          " cannot be reached by the desk's sandbox: its ancestor " + opt.folder().native() +
                          " has mode 0700, which lets no other user search it; move the desk or run `chmod o+x " +
                          opt.folder().native() + "`"));
}

TEST_F(ConfigTest, ADeskUnderTmpOrBehindAPrivateFolderOutsideTheSystemIsFine) {
  // The sandbox builds the way to such a desk itself; mkdtemp's 0700 folder is no obstacle.
  PrivateFolder tmp("/tmp");
  ASSERT_TRUE(tmp.made());
  struct stat status {};
  ASSERT_EQ(::stat(tmp.folder().c_str(), &status), 0);
  ASSERT_EQ(status.st_mode & 0777, 0700u);
  const Config config = valid(desk_at("alpha", tmp.desk().native()) + desk_at("beta", "desks/beta"));
  ASSERT_EQ(config.desks.size(), 2u);
  EXPECT_EQ(config.desks[0].directory, tmp.desk());
}

TEST_F(ConfigTest, DesksAreStrangersByDefault) {
  // Alpha sees the whole host, so every other desk's folder and secret is masked for it;
  // beta (the minimal view) is given only what could be in its sight (issue 27: a thousand
  // desks in one folder would each mask the other 999 for nothing). The full view needs a
  // way to the folder the sandbox does not build itself.
  fs::permissions(root_, fs::perms::others_exec | fs::perms::group_exec, fs::perm_options::add);
  const Config config = valid(R"([[desk]]
name = "alpha"
directory = "desks/alpha"
hidden_paths = ["/srv/alpha-secret"]
[desk.sandbox]
host_view = "full"
[[desk]]
name = "beta"
directory = "desks/beta"
[desk.sandbox]
hidden_paths = ["/srv/beta-secret", "desks/beta/keys"]
)");
  ASSERT_EQ(config.desks.size(), 2u);
  const DeskConfig& alpha = config.desks[0];
  const DeskConfig& beta = config.desks[1];
  EXPECT_EQ(alpha.hidden_paths,
            (std::vector<fs::path>{"/srv/alpha-secret", "/var/lib/deskd", "/run/deskd/deskd.sock",
                                   "/run/deskd/web.sock", root_ / "desks/beta", "/srv/beta-secret", root_ / "desks/beta/keys"}));
  EXPECT_EQ(beta.hidden_paths,
            (std::vector<fs::path>{"/srv/beta-secret", root_ / "desks/beta/keys", "/var/lib/deskd",
                                   "/run/deskd/deskd.sock",
                                   "/run/deskd/web.sock"}));
  EXPECT_FALSE(in_sight(beta, root_ / "desks/alpha"));
  EXPECT_FALSE(in_sight(beta, "/srv/alpha-secret"));
  EXPECT_THAT(alpha.readable_desks, IsEmpty());
  EXPECT_THAT(alpha.readable_desk_folders, IsEmpty());
}

TEST_F(ConfigTest, ADeskMayReadTheDesksItNamesButNotTheirSecrets) {
  fs::create_directories(root_ / "desks/gamma");
  const Config config = valid(R"([[desk]]
name = "alpha"
directory = "desks/alpha"
readable_desks = ["beta", "gamma", "beta"]
[[desk]]
name = "beta"
directory = "desks/beta"
hidden_paths = ["desks/beta/keys"]
[[desk]]
name = "gamma"
directory = "desks/gamma"
)");
  ASSERT_EQ(config.desks.size(), 3u);
  const DeskConfig& alpha = config.desks[0];
  EXPECT_EQ(alpha.readable_desks, (std::vector<std::string>{"beta", "gamma"}));
  EXPECT_EQ(alpha.readable_desk_folders, (std::vector<fs::path>{root_ / "desks/beta", root_ / "desks/gamma"}));
  // The config places them in the very value the sandbox is built from.
  EXPECT_THAT(alpha.sandbox.read_only_paths, IsSupersetOf({root_ / "desks/beta", root_ / "desks/gamma"}));
  EXPECT_THAT(alpha.hidden_paths, Not(Contains(root_ / "desks/beta")));
  EXPECT_THAT(alpha.hidden_paths, Not(Contains(root_ / "desks/gamma")));
  EXPECT_THAT(alpha.hidden_paths, Contains(root_ / "desks/beta/keys"));
  // Reading is not mutual: alpha's folder is not in beta's sight.
  EXPECT_FALSE(in_sight(config.desks[1], root_ / "desks/alpha"));
  EXPECT_THAT(config.desks[1].readable_desk_folders, IsEmpty());
}

TEST_F(ConfigTest, UnderTheMinimalViewADeskMasksTheOtherDesksInItsSightOnly) {
  fs::create_directories(root_ / "shelf/beta");
  fs::create_directories(root_ / "desks/gamma");
  const Config config = valid(R"([[desk]]
name = "alpha"
directory = "desks/alpha"
[desk.sandbox]
read_only_paths = ["shelf"]
[[desk]]
name = "beta"
directory = "shelf/beta"
hidden_paths = ["shelf/beta/keys"]
[[desk]]
name = "gamma"
directory = "desks/gamma"
)");
  ASSERT_EQ(config.desks.size(), 3u);
  const DeskConfig& alpha = config.desks[0];
  // Beta's folder lies in what alpha may read, so it is masked, and its secret with it.
  EXPECT_THAT(alpha.hidden_paths, Contains(root_ / "shelf/beta"));
  EXPECT_THAT(alpha.hidden_paths, Contains(root_ / "shelf/beta/keys"));
  // Gamma's is nowhere in alpha's view: nothing to mask.
  EXPECT_THAT(alpha.hidden_paths, Not(Contains(root_ / "desks/gamma")));
  EXPECT_FALSE(in_sight(alpha, root_ / "desks/gamma"));
  EXPECT_TRUE(in_sight(alpha, root_ / "shelf/beta"));
  EXPECT_TRUE(in_sight(alpha, "/usr/share/secret"));
  EXPECT_TRUE(in_sight(alpha, "/"));  // a mask of / would hold every place it sees
}

TEST_F(ConfigTest, ReadableDesksMustNameOtherDesksOfTheConfig) {
  EXPECT_THAT(problems(parse(R"([[desk]]
name = "alpha"
directory = "desks/alpha"
readable_desks = ["alpha", "gamma"]
[[desk]]
name = "beta"
directory = "desks/beta"
readable_desks = "alpha"
)")),
              ElementsAre("4:19: desk 'alpha' names itself in 'readable_desks'; a desk always reads its own folder",
                          "4:28: 'readable_desks' names 'gamma', but no desk of this config is called that; the "
                          "desks are alpha, beta",
                          "8:18: 'readable_desks' must be an array of strings"));
}

TEST_F(ConfigTest, AnotherDesksHiddenPathMayNotCoverADesk) {
  EXPECT_THAT(problems(parse(R"([[desk]]
name = "alpha"
directory = "desks/alpha"
[[desk]]
name = "beta"
directory = "desks/beta"
hidden_paths = ["desks", "desks/alpha/notes"]
)")),
              Contains("7:17: the hidden path " + (root_ / "desks").native() + " of desk 'beta' holds the folder "
                       "of desk 'alpha', " + (root_ / "desks/alpha").native() + ", so desk 'alpha' could read "
                       "nothing of its own; a desk's hidden paths are hidden from every other desk too"));
  EXPECT_THAT(problems(parse(R"([[desk]]
name = "alpha"
directory = "desks/alpha"
[[desk]]
name = "beta"
directory = "desks/beta"
hidden_paths = ["desks/alpha/notes"]
)")),
              ElementsAre("7:17: the hidden path " + (root_ / "desks/alpha/notes").native() +
                          " of desk 'beta' is a place desk 'alpha' must be able to write; a desk's hidden paths "
                          "are hidden from every other desk too"));
}

TEST_F(ConfigTest, AReadOnlyPathOrReadableDeskThatIsHiddenIsReported) {
  fs::create_directories(root_ / "shared/data");
  const std::string root = root_.native();
  EXPECT_THAT(problems(parse(R"([[desk]]
name = "alpha"
directory = "desks/alpha"
hidden_paths = ["shared"]
[desk.sandbox]
read_only_paths = ["shared/data", "desks/beta"]
[[desk]]
name = "beta"
directory = "desks/beta"
readable_desks = ["alpha"]
hidden_paths = ["desks/alpha"]
)")),
              ElementsAre("6:20: the read-only path " + root + "/shared/data is hidden from desk 'alpha' (by " + root +
                              "/shared), so the desk could never read it; to let a desk read another desk's folder, "
                              "name that desk in 'readable_desks'",
                          "6:35: the read-only path " + root + "/desks/beta is hidden from desk 'alpha' (by " + root +
                              "/desks/beta), so the desk could never read it; to let a desk read another desk's "
                              "folder, name that desk in 'readable_desks'",
                          "10:19: desk 'alpha', which 'readable_desks' names, has its folder " + root +
                              "/desks/alpha hidden from desk 'beta' (by " + root +
                              "/desks/alpha), so it would stay hidden",
                          "11:17: the hidden path " + root + "/desks/alpha of desk 'beta' holds the folder of desk "
                              "'alpha', " + root + "/desks/alpha, so desk 'alpha' could read nothing of its own; a "
                              "desk's hidden paths are hidden from every other desk too"));
}

}  // namespace
}  // namespace deskd::app
