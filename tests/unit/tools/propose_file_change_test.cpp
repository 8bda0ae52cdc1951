// propose_file_change: stores a proposal for the user, never changes the file, and is
// refused for hidden paths and for the desk's own writable places.

#include <string>

#include "unit/tools/file_tools_fixture.h"

namespace {

using deskd::policy::testing::entries_of;
using deskd::policy::testing::kPlan;
using deskd::policy::testing::make_symlink;
using deskd::policy::testing::read_file;
using deskd::tools::FileToolContext;
using deskd::tools::ProposeFileChangeTool;
using deskd::tools::testing::FileToolsFixture;
using deskd::tools::testing::run_call;
using ::testing::MatchesRegex;

using ProposeFileChangeTest = FileToolsFixture;

TEST_F(ProposeFileChangeTest, StoresAProposalAndLeavesTheFileAlone) {
  const auto result = propose({{"path", "plan.md"},
                               {"content", "The user's better plan.\n"},
                               {"reason", "The plan needed improving."}});
  EXPECT_FALSE(result.is_error) << result.text;
  EXPECT_THAT(result.text, MatchesRegex("Proposal p-[0-9a-f]{12} stored: a change to plan\\.md \\(\\+1 -1 lines\\)\\. "
                                        "The user will accept or reject it; until then the file stays as it is\\."));
  EXPECT_EQ(read_file(desk() / "plan.md"), kPlan);

  auto proposals = store().list();
  ASSERT_TRUE(proposals.ok());
  ASSERT_EQ(proposals->size(), 1u);
  const auto& proposal = proposals->front();
  EXPECT_EQ(result.text.substr(9, 14), proposal.id);
  EXPECT_EQ(proposal.desk, "research");
  EXPECT_EQ(proposal.path, (desk() / "plan.md").native());
  EXPECT_EQ(proposal.reason, "The plan needed improving.");
  EXPECT_EQ(proposal.content, "The user's better plan.\n");
  EXPECT_EQ(proposal.status, "open");
  EXPECT_EQ(proposal.time, "2024-01-01T05:30:00+05:30");
  // Desk-relative labels: `patch -p1` in the desk folder applies the diff.
  EXPECT_EQ(proposal.diff, "--- a/plan.md\n+++ b/plan.md\n@@ -1 +1 @@\n-The user's plan.\n+The user's better plan.\n");
}

TEST_F(ProposeFileChangeTest, ANewFileDiffsAgainstNothing) {
  const auto result = propose({{"path", "new.md"}, {"content", "a\nb\n"}, {"reason", "docs"}});
  EXPECT_FALSE(result.is_error) << result.text;
  EXPECT_THAT(result.text, ::testing::HasSubstr("stored: a new file new.md (+2 -0 lines)"));
  auto proposals = store().list();
  ASSERT_TRUE(proposals.ok());
  ASSERT_EQ(proposals->size(), 1u);
  EXPECT_EQ(proposals->front().path, (desk() / "new.md").native());
  EXPECT_EQ(proposals->front().diff, "--- a/new.md\n+++ b/new.md\n@@ -0,0 +1,2 @@\n+a\n+b\n");
  EXPECT_FALSE(std::filesystem::exists(desk() / "new.md"));
}

// Issue 26: a proposal names only a file of the desk's own folder (or of proposable_paths).
TEST_F(ProposeFileChangeTest, APathOutsideTheDeskFolderIsRefused) {
  for (const std::string& requested : {std::string("../docs/new.md"), std::string("/etc/profile.d/x.sh"),
                                       std::string(".."), desk().native()}) {
    const auto result = propose({{"path", requested}, {"content", "x"}, {"reason", "r"}});
    EXPECT_TRUE(result.is_error);
    EXPECT_EQ(result.text, requested + " is outside your desk folder; you may propose changes only to files inside it.");
  }
  EXPECT_TRUE(entries_of(proposals_folder()).empty());
  EXPECT_FALSE(std::filesystem::exists(root() / "docs"));
}

TEST_F(ProposeFileChangeTest, HiddenPathsGetThePolicyReadMessage) {
  make_symlink(token(), desk() / "token_link");
  for (const std::string& requested :
       {std::string("../secrets/key.txt"), std::string("../secrets/new.txt"), token().native(), std::string("token_link")}) {
    const auto result = propose({{"path", requested}, {"content", "x"}, {"reason", "r"}});
    EXPECT_TRUE(result.is_error);
    EXPECT_EQ(result.text, requested + " holds secrets and cannot be read.");
  }
  EXPECT_TRUE(entries_of(proposals_folder()).empty());
}

TEST_F(ProposeFileChangeTest, TheDesksOwnPlacesAreWrittenDirectly) {
  for (const std::string& requested : {std::string("Memory.md"), std::string("notes/a.md"), std::string("scratch/x/y"),
                                      (desk() / "memory" / "m.md").native()}) {
    const auto result = propose({{"path", requested}, {"content", "x"}, {"reason", "r"}});
    EXPECT_TRUE(result.is_error);
    EXPECT_EQ(result.text, requested + " is in your own writable places; write it with write_file.");
  }
  EXPECT_TRUE(entries_of(proposals_folder()).empty());
}

TEST_F(ProposeFileChangeTest, RefusesNoChangeFoldersAndEmptyReasons) {
  EXPECT_EQ(propose({{"path", "plan.md"}, {"content", std::string(kPlan)}, {"reason", "r"}}).text,
            "plan.md already holds exactly this content; there is nothing to propose.");
  std::filesystem::create_directory(desk() / "docs");
  EXPECT_EQ(propose({{"path", "docs"}, {"content", "x"}, {"reason", "r"}}).text, "docs is a folder, not a file.");
  EXPECT_EQ(propose({{"path", "plan.md"}, {"content", "x"}, {"reason", " \n"}}).text,
            "propose_file_change needs a non-empty 'reason' saying why the change is wanted.");
  EXPECT_TRUE(entries_of(proposals_folder()).empty());
}

TEST_F(ProposeFileChangeTest, WithoutAStoreItRefuses) {
  ProposeFileChangeTool tool(std::make_shared<const FileToolContext>(policy(), nullptr, "research"));
  const auto result = run_call(tool, {{"path", "plan.md"}, {"content", "x"}, {"reason", "r"}});
  EXPECT_TRUE(result.is_error);
  EXPECT_EQ(result.text, "propose_file_change is not available: this desk has no proposals folder.");
}

TEST_F(ProposeFileChangeTest, MalformedInputNamesTheField) {
  EXPECT_EQ(propose({{"content", "x"}, {"reason", "r"}}).text, "propose_file_change needs a string 'path'.");
  EXPECT_EQ(propose({{"path", "plan.md"}, {"reason", "r"}}).text, "propose_file_change needs a string 'content'.");
  EXPECT_EQ(propose({{"path", "plan.md"}, {"content", "x"}}).text, "propose_file_change needs a string 'reason'.");
  EXPECT_EQ(propose({{"path", "plan.md"}, {"content", "x"}, {"reason", false}}).text,
            "propose_file_change needs a string 'reason'.");
  EXPECT_TRUE(entries_of(proposals_folder()).empty());
}

}  // namespace
