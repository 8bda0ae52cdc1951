// write_file and edit_file: only inside the desk's writable places, Memory.md in place,
// everything else atomically, and exact-text edits that refuse to guess.

#include <string>

#include "unit/tools/file_tools_fixture.h"

namespace {

using deskd::policy::testing::entries_of;
using deskd::policy::testing::kPlan;
using deskd::policy::testing::make_symlink;
using deskd::policy::testing::read_file;
using deskd::policy::testing::write_file;
using deskd::tools::EditFileTool;
using deskd::tools::WriteFileTool;
using deskd::tools::testing::cannot_be_written;
using deskd::tools::testing::FileToolsFixture;
using deskd::tools::testing::inode_of;
using deskd::tools::testing::run_call;
using ::testing::HasSubstr;

using WriteFileTest = FileToolsFixture;
using EditFileTest = FileToolsFixture;

TEST_F(WriteFileTest, WritesInsideTheWritablePlacesAndCreatesFolders) {
  auto result = write({{"path", "notes/2024/jan/today.md"}, {"content", "hello"}});
  EXPECT_FALSE(result.is_error) << result.text;
  EXPECT_EQ(result.text, "Wrote 5 bytes to notes/2024/jan/today.md.");
  EXPECT_EQ(read_file(desk() / "notes" / "2024" / "jan" / "today.md"), "hello");

  EXPECT_EQ(write({{"path", (desk() / "scratch" / "x").native()}, {"content", "1"}}).text,
            "Wrote 1 byte to " + (desk() / "scratch" / "x").native() + ".");
  EXPECT_EQ(write({{"path", "memory/empty"}, {"content", ""}}).text, "Wrote 0 bytes to memory/empty.");
  EXPECT_EQ(read_file(desk() / "memory" / "empty"), "");
}

TEST_F(WriteFileTest, MemoryMdIsRewrittenInPlace) {
  const auto before = inode_of(desk() / "Memory.md");
  const auto result = write({{"path", "Memory.md"}, {"content", "# Memory\nremember this\n"}});
  EXPECT_FALSE(result.is_error) << result.text;
  EXPECT_EQ(inode_of(desk() / "Memory.md"), before);
  EXPECT_EQ(read_file(desk() / "Memory.md"), "# Memory\nremember this\n");
  // Shorter content leaves nothing of the old behind.
  EXPECT_FALSE(write({{"path", "Memory.md"}, {"content", "x"}}).is_error);
  EXPECT_EQ(read_file(desk() / "Memory.md"), "x");
  EXPECT_EQ(inode_of(desk() / "Memory.md"), before);
}

TEST_F(WriteFileTest, OtherFilesAreReplacedAtomically) {
  write_file(desk() / "notes" / "a.md", "old");
  const auto before = inode_of(desk() / "notes" / "a.md");
  EXPECT_FALSE(write({{"path", "notes/a.md"}, {"content", "new"}}).is_error);
  EXPECT_EQ(read_file(desk() / "notes" / "a.md"), "new");
  EXPECT_NE(inode_of(desk() / "notes" / "a.md"), before);  // a new file was renamed over it
  EXPECT_EQ(entries_of(desk() / "notes"), std::vector<std::string>{"a.md"});  // no temporary left
}

TEST_F(WriteFileTest, RefusesEverythingElseWithTheSeedMessage) {
  for (const std::string& requested :
       {std::string("plan.md"), std::string("notes"), std::string("Memory.md.bak"), std::string("../outside.md"),
        std::string("notes/../plan.md"), (root() / "elsewhere.md").native()}) {
    const auto result = write({{"path", requested}, {"content", "x"}});
    EXPECT_TRUE(result.is_error) << requested;
    EXPECT_EQ(result.text, cannot_be_written(requested));
  }
  EXPECT_EQ(read_file(desk() / "plan.md"), kPlan);
  EXPECT_FALSE(std::filesystem::exists(root() / "outside.md"));
}

TEST_F(WriteFileTest, APlantedLinkCannotLeadAWriteOut) {
  make_symlink(desk() / "plan.md", desk() / "notes" / "plan_link.md");
  make_symlink(root(), desk() / "scratch" / "up");
  auto result = write({{"path", "notes/plan_link.md"}, {"content", "owned"}});
  EXPECT_EQ(result.text, cannot_be_written("notes/plan_link.md"));
  result = write({{"path", "scratch/up/evil.md"}, {"content", "owned"}});
  EXPECT_EQ(result.text, cannot_be_written("scratch/up/evil.md"));
  EXPECT_EQ(read_file(desk() / "plan.md"), kPlan);
  EXPECT_FALSE(std::filesystem::exists(root() / "evil.md"));
}

TEST_F(WriteFileTest, AHiddenPathInsideAWritablePlaceCannotBeWritten) {
  std::filesystem::create_directories(desk() / "notes" / "private");
  auto context = context_hiding({"notes/private"});
  ASSERT_NE(context, nullptr);
  WriteFileTool tool(context);
  const auto result = run_call(tool, {{"path", "notes/private/x.md"}, {"content", "x"}});
  EXPECT_TRUE(result.is_error);
  EXPECT_EQ(result.text, "notes/private/x.md holds secrets and cannot be written.");
}

TEST_F(WriteFileTest, AFolderIsNotOverwritten) {
  std::filesystem::create_directories(desk() / "notes" / "folder");
  const auto result = write({{"path", "notes/folder"}, {"content", "x"}});
  EXPECT_TRUE(result.is_error);
  EXPECT_EQ(result.text, "notes/folder is a folder, not a file.");
}

TEST_F(WriteFileTest, MalformedInputNamesTheField) {
  EXPECT_EQ(write({{"content", "x"}}).text, "write_file needs a string 'path'.");
  EXPECT_EQ(write({{"path", "notes/a.md"}}).text, "write_file needs a string 'content'.");
  EXPECT_EQ(write({{"path", "notes/a.md"}, {"content", 7}}).text, "write_file needs a string 'content'.");
  EXPECT_EQ(write({{"path", "notes/a.md"}, {"content", boost::json::object{{"text", "x"}}}}).text,
            "write_file needs a string 'content'.");
  EXPECT_FALSE(std::filesystem::exists(desk() / "notes" / "a.md"));
  EXPECT_EQ(write({{"path", "notes/b.md"}, {"content", "x"}, {"mode", "append"}}).text, "Wrote 1 byte to notes/b.md.");
}

TEST_F(EditFileTest, ReplacesExactlyOneOccurrence) {
  write_file(desk() / "notes" / "a.md", "alpha\nbeta\ngamma\n");
  const auto result = edit({{"path", "notes/a.md"}, {"old_text", "beta\n"}, {"new_text", "BETA\nbeta2\n"}});
  EXPECT_FALSE(result.is_error) << result.text;
  EXPECT_EQ(result.text, "Replaced 1 occurrence of old_text in notes/a.md.");
  EXPECT_EQ(read_file(desk() / "notes" / "a.md"), "alpha\nBETA\nbeta2\ngamma\n");
}

TEST_F(EditFileTest, RefusesMissingText) {
  write_file(desk() / "notes" / "a.md", "alpha\n");
  const auto result = edit({{"path", "notes/a.md"}, {"old_text", "Alpha"}, {"new_text", "x"}});
  EXPECT_TRUE(result.is_error);
  EXPECT_EQ(result.text, "old_text was not found in notes/a.md.");
  EXPECT_EQ(read_file(desk() / "notes" / "a.md"), "alpha\n");
}

TEST_F(EditFileTest, RefusesAmbiguousTextUnlessReplaceAll) {
  write_file(desk() / "notes" / "a.md", "x = 1\nx = 1\nx = 1\n");
  auto result = edit({{"path", "notes/a.md"}, {"old_text", "x = 1"}, {"new_text", "x = 2"}});
  EXPECT_TRUE(result.is_error);
  EXPECT_EQ(result.text, "old_text appears 3 times in notes/a.md; give more context or set replace_all.");
  EXPECT_EQ(read_file(desk() / "notes" / "a.md"), "x = 1\nx = 1\nx = 1\n");

  result = edit({{"path", "notes/a.md"}, {"old_text", "x = 1"}, {"new_text", "x = 2"}, {"replace_all", false}});
  EXPECT_TRUE(result.is_error);

  result = edit({{"path", "notes/a.md"}, {"old_text", "x = 1"}, {"new_text", "x = 2"}, {"replace_all", true}});
  EXPECT_FALSE(result.is_error) << result.text;
  EXPECT_EQ(result.text, "Replaced 3 occurrences of old_text in notes/a.md.");
  EXPECT_EQ(read_file(desk() / "notes" / "a.md"), "x = 2\nx = 2\nx = 2\n");
}

TEST_F(EditFileTest, OverlappingMatchesAreAmbiguous) {
  write_file(desk() / "notes" / "a.md", "aaa");
  EXPECT_EQ(edit({{"path", "notes/a.md"}, {"old_text", "aa"}, {"new_text", "b"}}).text,
            "old_text appears 2 times in notes/a.md; give more context or set replace_all.");
  // replace_all replaces left to right without overlap.
  EXPECT_EQ(edit({{"path", "notes/a.md"}, {"old_text", "aa"}, {"new_text", "b"}, {"replace_all", true}}).text,
            "Replaced 1 occurrence of old_text in notes/a.md.");
  EXPECT_EQ(read_file(desk() / "notes" / "a.md"), "ba");
}

TEST_F(EditFileTest, MemoryMdIsEditedInPlace) {
  const auto before = inode_of(desk() / "Memory.md");
  const auto result = edit({{"path", "Memory.md"}, {"old_text", "# Memory"}, {"new_text", "# Memory of the desk"}});
  EXPECT_FALSE(result.is_error) << result.text;
  EXPECT_EQ(read_file(desk() / "Memory.md"), "# Memory of the desk\n");
  EXPECT_EQ(inode_of(desk() / "Memory.md"), before);
}

TEST_F(EditFileTest, OnlyWritableFilesCanBeEdited) {
  auto result = edit({{"path", "plan.md"}, {"old_text", "plan"}, {"new_text", "scheme"}});
  EXPECT_TRUE(result.is_error);
  EXPECT_EQ(result.text, cannot_be_written("plan.md"));
  EXPECT_EQ(read_file(desk() / "plan.md"), kPlan);
  result = edit({{"path", "../secrets/key.txt"}, {"old_text", "SECRET"}, {"new_text", "x"}});
  EXPECT_EQ(result.text, cannot_be_written("../secrets/key.txt"));
}

TEST_F(EditFileTest, MissingFilesEmptyOrUnchangedTextAndBinaries) {
  EXPECT_EQ(edit({{"path", "notes/none.md"}, {"old_text", "a"}, {"new_text", "b"}}).text,
            "notes/none.md does not exist; create it with write_file.");
  write_file(desk() / "notes" / "a.md", "alpha\n");
  EXPECT_EQ(edit({{"path", "notes/a.md"}, {"old_text", ""}, {"new_text", "b"}}).text,
            "edit_file needs a non-empty 'old_text'; to write a whole file, use write_file.");
  EXPECT_EQ(edit({{"path", "notes/a.md"}, {"old_text", "alpha"}, {"new_text", "alpha"}}).text,
            "old_text and new_text are the same, so there is nothing to change.");
  write_file(desk() / "scratch" / "b.bin", std::string("ab\0cd", 5));
  EXPECT_EQ(edit({{"path", "scratch/b.bin"}, {"old_text", "ab"}, {"new_text", "x"}}).text,
            "scratch/b.bin is a binary file, not UTF-8 text, so edit_file does not change it.");
}

TEST_F(EditFileTest, MalformedInputNamesTheField) {
  write_file(desk() / "notes" / "a.md", "alpha\n");
  EXPECT_EQ(edit({{"old_text", "a"}, {"new_text", "b"}}).text, "edit_file needs a string 'path'.");
  EXPECT_EQ(edit({{"path", "notes/a.md"}, {"new_text", "b"}}).text, "edit_file needs a string 'old_text'.");
  EXPECT_EQ(edit({{"path", "notes/a.md"}, {"old_text", "a"}}).text, "edit_file needs a string 'new_text'.");
  EXPECT_EQ(edit({{"path", "notes/a.md"}, {"old_text", "a"}, {"new_text", 1}}).text,
            "edit_file needs a string 'new_text'.");
  EXPECT_EQ(edit({{"path", "notes/a.md"}, {"old_text", "alpha"}, {"new_text", "b"}, {"replace_all", "yes"}}).text,
            "edit_file needs 'replace_all' to be true or false.");
  EXPECT_EQ(read_file(desk() / "notes" / "a.md"), "alpha\n");
}

}  // namespace
