// list_directory: sorted, folders marked, links shown (never followed), hidden entries
// named but never entered, a cap with a note, and names a desk chose shown so that one
// entry never reads as two (or as a folder it is not).

#include <cstdio>
#include <string>

#include "base/terminal_text.h"
#include "unit/tools/file_tools_fixture.h"

namespace {

using deskd::policy::testing::make_symlink;
using deskd::policy::testing::write_file;
using deskd::tools::testing::FileToolsFixture;
using ::testing::HasSubstr;

using ListDirectoryTest = FileToolsFixture;

TEST_F(ListDirectoryTest, ListsTheDeskFolderByDefault) {
  const std::string expected = "Memory.md\nmemory/\nnotes/\nplan.md\nscratch/\n";
  EXPECT_EQ(list({}).text, expected);
  EXPECT_EQ(list({{"path", "."}}).text, expected);
  EXPECT_EQ(list({{"path", nullptr}}).text, expected);
  EXPECT_EQ(list({{"path", desk().native()}}).text, expected);
  EXPECT_FALSE(list({}).is_error);
}

TEST_F(ListDirectoryTest, SortsByNameAndMarksFolders) {
  std::filesystem::create_directories(desk() / "notes" / "a");
  write_file(desk() / "notes" / "a-b", "");
  write_file(desk() / "notes" / "B.md", "");
  write_file(desk() / "notes" / ".hidden_by_dot", "");
  EXPECT_EQ(list({{"path", "notes"}}).text, ".hidden_by_dot\nB.md\na/\na-b\n");
}

TEST_F(ListDirectoryTest, LinksShowTheirTargetAndAreNotFollowed) {
  make_symlink("../plan.md", desk() / "notes" / "plan_link");
  make_symlink(root() / "secrets", desk() / "notes" / "secret_link");
  make_symlink("nowhere", desk() / "notes" / "dangling");
  EXPECT_EQ(list({{"path", "notes"}}).text,
            "dangling -> nowhere\nplan_link -> ../plan.md\nsecret_link -> " + (root() / "secrets").native() + "\n");
  // Listing through the link is listing the hidden folder itself.
  const auto result = list({{"path", "notes/secret_link"}});
  EXPECT_TRUE(result.is_error);
  EXPECT_EQ(result.text, "notes/secret_link holds secrets and cannot be read.");
}

TEST_F(ListDirectoryTest, HiddenPathsAreNamedButNotEntered) {
  // The root holds the desk, the hidden secrets/ folder, the hidden token.txt and the
  // proposals folder.
  EXPECT_EQ(list({{"path", ".."}}).text, "desk/\nproposals/\nsecrets/\ntoken.txt\n");
  for (const std::string& requested : {std::string("../secrets"), secrets().native(), std::string("../token.txt")}) {
    const auto result = list({{"path", requested}});
    EXPECT_TRUE(result.is_error);
    EXPECT_EQ(result.text, requested + " holds secrets and cannot be read.");
  }
}

TEST_F(ListDirectoryTest, EmptyFoldersFilesAndMissingPaths) {
  EXPECT_EQ(list({{"path", "scratch"}}).text, "scratch is empty.");
  auto result = list({{"path", "plan.md"}});
  EXPECT_TRUE(result.is_error);
  EXPECT_EQ(result.text, "plan.md is a file, not a folder; read it with read_file.");
  result = list({{"path", "nope"}});
  EXPECT_TRUE(result.is_error);
  EXPECT_EQ(result.text, "nope does not exist.");
}

TEST_F(ListDirectoryTest, StopsAt1000EntriesWithANote) {
  const auto folder = desk() / "scratch" / "many";
  std::filesystem::create_directories(folder);
  for (int index = 1004; index >= 0; --index) {
    char name[16];
    std::snprintf(name, sizeof name, "f%04d", index);
    write_file(folder / name, "");
  }
  const auto result = list({{"path", "scratch/many"}});
  EXPECT_FALSE(result.is_error);
  EXPECT_TRUE(result.truncated);
  EXPECT_THAT(result.text, ::testing::StartsWith("f0000\nf0001\n"));
  EXPECT_THAT(result.text, ::testing::EndsWith(
                               "f0999\n\n(5 more entries are not shown; a listing stops at 1000. Use bash (ls, "
                               "find) to see the rest.)\n"));
  EXPECT_THAT(result.text, ::testing::Not(HasSubstr("f1000")));
}

TEST_F(ListDirectoryTest, OddNamesAreQuotedAsBashReadsThemAndOrdinaryOnesAreNot) {
  write_file(desk() / "scratch" / "a\nFAKE-ENTRY.md", "");
  write_file(desk() / "scratch" / "zz\x1b[2K\x1b[1Gplan.md", "");
  write_file(desk() / "scratch" / "..\u2215..\u2215etc\u2215passwd", "");
  write_file(desk() / "scratch" / "my notes.md", "");
  write_file(desk() / "scratch" / "योजना.md", "");
  make_symlink("../plan.md\nFAKE-LINK", desk() / "scratch" / "link");
  EXPECT_EQ(list({{"path", "scratch"}}).text,
            "$'..\\u2215..\\u2215etc\\u2215passwd'" + std::string(deskd::kLookAlikeSlashMark) +
                "\n"
                "$'a\\nFAKE-ENTRY.md'\n"
                "link -> $'../plan.md\\nFAKE-LINK'\n"
                "my notes.md\n"
                "$'zz\\e[2K\\e[1Gplan.md'\n"
                "योजना.md\n");
}

TEST_F(ListDirectoryTest, MalformedInputNamesTheField) {
  EXPECT_EQ(list({{"path", 3}}).text, "list_directory needs a string 'path'.");
  EXPECT_EQ(list({{"path", boost::json::array{}}}).text, "list_directory needs a string 'path'.");
  EXPECT_EQ(list({{"path", "notes"}, {"recursive", true}}).text, "notes is empty.");
  EXPECT_EQ(list({{"path", std::string("no\0tes", 6)}}).text,
            "no\\x00tes contains a NUL byte, which no path may hold.");
}

}  // namespace
