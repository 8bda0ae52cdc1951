#include "runner/desk/skill_library.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <fstream>

#include "runner/desk/front_matter.h"

namespace deskd::desk {
namespace {

namespace fs = std::filesystem;

class SkillLibraryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (fs::temp_directory_path() / "deskd-skills-XXXXXX").native();
    ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
    desk_ = fs::canonical(pattern);
  }
  void TearDown() override { fs::remove_all(desk_); }

  fs::path skill_file(const std::string& folder) const {
    return desk_ / "skills" / folder / "SKILL.md";
  }
  fs::path write_skill(const std::string& folder, const std::string& text) const {
    fs::create_directories(desk_ / "skills" / folder);
    std::ofstream(skill_file(folder), std::ios::binary) << text;
    return skill_file(folder);
  }
  // The only problem found, as text; fails the test when there is not exactly one.
  std::string only_problem() const {
    const SkillLibrary library = SkillLibrary::scan(desk_);
    EXPECT_TRUE(library.skills().empty());
    EXPECT_EQ(library.problems().size(), 1u);
    return library.problems().empty() ? "" : library.problems().front().text();
  }

  fs::path desk_;
};

TEST_F(SkillLibraryTest, NoSkillsFolderIsNoProblem) {
  const SkillLibrary library = SkillLibrary::scan(desk_);
  EXPECT_TRUE(library.skills().empty());
  EXPECT_TRUE(library.problems().empty());
}

TEST_F(SkillLibraryTest, ReadsAGoodSkill) {
  const fs::path file =
      write_skill("morning-brief",
                  "---\n"
                  "name: morning-brief\n"
                  "description: Prepare the pre-market brief. Use when: asked at 08:30.\n"
                  "license: Apache-2.0\n"
                  "---\n"
                  "\n"
                  "# Morning brief\n"
                  "1. Read notes/positions.md.\n"
                  "\n\n");
  const SkillLibrary library = SkillLibrary::scan(desk_);
  ASSERT_TRUE(library.problems().empty()) << library.problems().front().text();
  ASSERT_EQ(library.skills().size(), 1u);
  const Skill& skill = library.skills().front();
  EXPECT_EQ(skill.name, "morning-brief");
  EXPECT_EQ(skill.description, "Prepare the pre-market brief. Use when: asked at 08:30.");
  EXPECT_EQ(skill.path, file);
  EXPECT_EQ(skill.body, "# Morning brief\n1. Read notes/positions.md.");
  EXPECT_EQ(library.find("morning-brief"), &skill);
  EXPECT_EQ(library.find("evening-brief"), nullptr);
}

TEST_F(SkillLibraryTest, ASkillsFolderElsewhereIsReadTheSameWay) {
  write_skill("morning-brief", "---\nname: morning-brief\ndescription: Brief.\n---\nDo it.\n");
  fs::rename(desk_ / "skills", desk_ / "shared-skills");
  EXPECT_TRUE(SkillLibrary::scan(desk_).skills().empty());
  const SkillLibrary library = SkillLibrary::scan_folder(desk_ / "shared-skills");
  ASSERT_TRUE(library.problems().empty()) << library.problems().front().text();
  ASSERT_EQ(library.skills().size(), 1u);
  EXPECT_EQ(library.skills().front().path, desk_ / "shared-skills" / "morning-brief" / "SKILL.md");
  // A link as the folder itself is refused, as for a desk's own skills/.
  fs::create_directory_symlink(desk_ / "shared-skills", desk_ / "linked-skills");
  const SkillLibrary linked = SkillLibrary::scan_folder(desk_ / "linked-skills");
  EXPECT_TRUE(linked.skills().empty());
  EXPECT_EQ(linked.problems().size(), 1u);
}

TEST_F(SkillLibraryTest, UnderstandsTheYamlFrontMatterUses) {
  write_skill("folded",
              "---\r\nname: \"folded\"\r\ndescription: >\r\n  Folds these\r\n  two lines.\r\n"
              "metadata:\r\n  author: desk\r\n  version: \"1.0\"\r\n---\r\nBody.\r\n");
  write_skill("literal",
              "---\n# a comment\nname: 'literal'  # quoted, then a comment\n"
              "description: |\n  First line.\n    Indented.\n\n  After a blank.\n"
              "allowed-tools:\n- bash\n- read_file\n---\nBody.\n");
  write_skill("plain",
              "---\nname: plain\ndescription: Starts here\n  and goes on#here # a comment\n"
              "  to the end # a comment\n---\nBody.\n");
  write_skill("quotes",
              "---\nname: quotes\ndescription: \"Say \\\"buy\\\" \\\\ \\n\\t, #1\"\n---\nBody.\n");
  write_skill("single", "---\nname: single\ndescription: 'It''s fine: ok'\n---\nBody.\n");
  const SkillLibrary library = SkillLibrary::scan(desk_);
  ASSERT_TRUE(library.problems().empty()) << library.problems().front().text();
  ASSERT_EQ(library.skills().size(), 5u);
  EXPECT_EQ(library.find("folded")->description, "Folds these two lines.");
  EXPECT_EQ(library.find("folded")->body, "Body.");
  EXPECT_EQ(library.find("literal")->description, "First line.\n  Indented.\n\nAfter a blank.");
  EXPECT_EQ(library.find("plain")->description, "Starts here and goes on#here to the end");
  EXPECT_EQ(library.find("quotes")->description, "Say \"buy\" \\ \n\t, #1");
  EXPECT_EQ(library.find("single")->description, "It's fine: ok");
  // Sorted by name.
  EXPECT_EQ(library.skills().front().name, "folded");
  EXPECT_EQ(library.skills().back().name, "single");
}

TEST_F(SkillLibraryTest, ReportsMalformedFrontMatterWithFileAndLine) {
  const std::pair<std::string, std::string> cases[] = {
      {"# Just instructions\n", ":1: it has no front matter"},
      {"---\nname: x\ndescription: y\n",
       ":1: its front matter starts with --- on line 1 but no --- line ends it."},
      {"---\ndescription: Something.\n---\nBody.\n", ":1: its front matter has no name."},
      {"---\nname: bad\n---\nBody.\n", ":1: its front matter has no description."},
      {"---\nname: bad\ndescription:\n---\nBody.\n", ":3: its front matter has no description."},
      {"---\nname: other\ndescription: d\n---\nBody.\n",
       ":2: its name \"other\" does not match its folder \"bad\"."},
      {"---\nname: bad\ndescription: d\n---\n\n  \n",
       ":4: it has no instructions after its front matter."},
      {"---\nname: bad\ndescription: d\nname: bad\n---\nBody.\n",
       ":4: the key name is already given on line 2."},
      {"---\nname: bad\ndescription: \"open\n---\nBody.\n",
       ":3: the quoted value of description does not end"},
      {"---\nname: bad\ndescription: \"closed\" trailing\n---\nBody.\n",
       ":3: the quoted value of description"},
      {"---\nname: bad\njust words\ndescription: d\n---\nBody.\n", ":3: expected \"key: value\""},
      {"---\nname: bad\ndescription:d\n---\nBody.\n", ":3: expected \"key: value\""},
      {"---\n  name: bad\ndescription: d\n---\nBody.\n", ":2: this line is indented, but no key"},
      {"---\nname: \"bad\"\ndescription: \"d\"\n- stray\n---\nBody.\n",
       ":4: expected \"key: value\""},
      {"---\nname: bad\ndescription: " + std::string(1025, 'x') + "\n---\nBody.\n",
       ":3: its description is longer than 1024 characters."},
  };
  for (const auto& [text, expected] : cases) {
    const fs::path file = write_skill("bad", text);
    const std::string problem = only_problem();
    EXPECT_EQ(problem.substr(0, file.native().size()), file.native());
    EXPECT_NE(problem.find(expected, file.native().size()), std::string::npos) << text << "\n"
                                                                               << problem;
  }
}

TEST_F(SkillLibraryTest, ReportsEveryReasonOfOneSkill) {
  write_skill("both", "---\nlicense: MIT\n---\n");
  const SkillLibrary library = SkillLibrary::scan(desk_);
  ASSERT_EQ(library.problems().size(), 3u);
  EXPECT_NE(library.problems()[0].why.find("no name"), std::string::npos);
  EXPECT_NE(library.problems()[1].why.find("no description"), std::string::npos);
  EXPECT_EQ(library.problems()[2].line, 3u);
  EXPECT_NE(library.problems()[2].why.find("no instructions"), std::string::npos);
}

TEST_F(SkillLibraryTest, NamesFollowTheAgentSkillsRules) {
  for (const char* good : {"a", "morning-brief", "nifty50", "x-1-y"}) {
    EXPECT_TRUE(is_valid_skill_name(good)) << good;
  }
  EXPECT_TRUE(is_valid_skill_name(std::string(64, 'a')));
  for (const char* bad : {"", "Morning", "-brief", "brief-", "morning--brief", "morning_brief",
                          "morning brief", "brief.md", "बाजार"}) {
    EXPECT_FALSE(is_valid_skill_name(bad)) << bad;
  }
  EXPECT_FALSE(is_valid_skill_name(std::string(65, 'a')));
  write_skill("Bad-Name", "---\nname: Bad-Name\ndescription: d\n---\nBody.\n");
  EXPECT_NE(only_problem().find(":2: its name \"Bad-Name\" is not a skill name"),
            std::string::npos);
}

TEST_F(SkillLibraryTest, ReservedNamesAreReported) {
  write_skill("stop", "---\nname: stop\ndescription: d\n---\nBody.\n");
  write_skill("hedge", "---\nname: hedge\ndescription: d\n---\nBody.\n");
  const std::string_view reserved[] = {"stop", "status", "help"};
  const SkillLibrary library = SkillLibrary::scan(desk_, reserved);
  ASSERT_EQ(library.skills().size(), 1u);
  EXPECT_EQ(library.skills().front().name, "hedge");
  ASSERT_EQ(library.problems().size(), 1u);
  EXPECT_EQ(library.problems().front().text(),
            skill_file("stop").native() +
                ":2: its name \"stop\" is taken by the desk's own /stop command.");
}

TEST_F(SkillLibraryTest, FolderProblems) {
  fs::create_directories(desk_ / "skills" / "empty");
  std::ofstream(desk_ / "skills" / "README.md") << "not a skill";
  fs::create_directories(desk_ / "skills" / ".git");
  write_skill("binary", std::string("---\nname: binary\ndescription: \xff\n---\nBody.\n"));
  write_skill("huge", "---\nname: huge\ndescription: d\n---\n" + std::string(256 * 1024, 'x'));
  const SkillLibrary library = SkillLibrary::scan(desk_);
  EXPECT_TRUE(library.skills().empty());
  ASSERT_EQ(library.problems().size(), 3u);
  EXPECT_EQ(library.problems()[0].text(),
            skill_file("binary").native() + ": it is not UTF-8 text.");
  EXPECT_EQ(library.problems()[1].text(),
            (desk_ / "skills" / "empty").native() + ": the skill folder has no SKILL.md.");
  EXPECT_EQ(library.problems()[2].text(),
            skill_file("huge").native() + ": it is larger than 256 KiB.");
}

TEST_F(SkillLibraryTest, SymbolicLinksAreRefused) {
  const fs::path outside = desk_ / "outside";
  fs::create_directories(outside / "linked");
  std::ofstream(outside / "linked" / "SKILL.md")
      << "---\nname: linked\ndescription: d\n---\nSECRET\n";
  fs::create_directories(desk_ / "skills");
  fs::create_directory_symlink(outside / "linked", desk_ / "skills" / "linked");
  fs::create_directories(desk_ / "skills" / "file-link");
  fs::create_symlink(outside / "linked" / "SKILL.md", skill_file("file-link"));
  const SkillLibrary library = SkillLibrary::scan(desk_);
  EXPECT_TRUE(library.skills().empty());
  ASSERT_EQ(library.problems().size(), 2u);
  for (const SkillProblem& problem : library.problems()) {
    EXPECT_NE(problem.why.find("is a symbolic link"), std::string::npos) << problem.text();
    EXPECT_EQ(problem.why.find("SECRET"), std::string::npos);
  }
}

TEST_F(SkillLibraryTest, ASymlinkedSkillsFolderIsRefused) {
  fs::create_directories(desk_ / "elsewhere" / "hedge");
  std::ofstream(desk_ / "elsewhere" / "hedge" / "SKILL.md")
      << "---\nname: hedge\ndescription: d\n---\nBody.\n";
  fs::create_directory_symlink(desk_ / "elsewhere", desk_ / "skills");
  const SkillLibrary library = SkillLibrary::scan(desk_);
  EXPECT_TRUE(library.skills().empty());
  ASSERT_EQ(library.problems().size(), 1u);
  EXPECT_NE(library.problems().front().why.find("The skills folder is a symbolic link"),
            std::string::npos);
}

TEST_F(SkillLibraryTest, ASkillsFileInsteadOfAFolderIsReported) {
  std::ofstream(desk_ / "skills") << "not a folder";
  const SkillLibrary library = SkillLibrary::scan(desk_);
  EXPECT_TRUE(library.skills().empty());
  ASSERT_EQ(library.problems().size(), 1u);
  EXPECT_NE(library.problems().front().why.find("cannot be listed"), std::string::npos);
}

TEST_F(SkillLibraryTest, AMissingDeskFolderIsReported) {
  const SkillLibrary library = SkillLibrary::scan(desk_ / "absent");
  EXPECT_TRUE(library.skills().empty());
  ASSERT_EQ(library.problems().size(), 1u);
  EXPECT_NE(library.problems().front().why.find("cannot be resolved"), std::string::npos);
}

TEST_F(SkillLibraryTest, Invocation) {
  write_skill("hedge", "---\nname: hedge\ndescription: d\n---\nHedge the book.\n");
  write_skill(
      "size",
      "---\nname: size\ndescription: d\n---\nSize a position in $ARGUMENTS.\nLog $ARGUMENTS.\n");
  const SkillLibrary library = SkillLibrary::scan(desk_);
  ASSERT_EQ(library.skills().size(), 2u);
  const std::string header = "Skill /hedge (from " + skill_file("hedge").native() + "):\n\n";
  EXPECT_EQ(library.invocation("hedge", "").value(), header + "Hedge the book.");
  EXPECT_EQ(library.invocation("hedge", "NIFTY only").value(),
            header + "Hedge the book.\n\nArguments: NIFTY only");
  EXPECT_EQ(library.invocation("size", "RELIANCE").value(),
            "Skill /size (from " + skill_file("size").native() +
                "):\n\nSize a position in RELIANCE.\nLog RELIANCE.");
  EXPECT_EQ(
      library.invocation("size", "").value(),
      "Skill /size (from " + skill_file("size").native() + "):\n\nSize a position in .\nLog .");
  const auto unknown = library.invocation("nope", "x");
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.error().code, ErrorCode::not_found);
  EXPECT_NE(unknown.error().what.find("/skills"), std::string::npos);
}

TEST(FrontMatterTest, BodyKeepsItsInnerBlankLinesAndIndentation) {
  const FrontMatterParse parsed = parse_front_matter("---\nname: a\n---\n\n    code\n\ntext\n\n");
  ASSERT_TRUE(parsed.front_matter.has_value()) << parsed.why;
  EXPECT_EQ(parsed.front_matter->body, "    code\n\ntext");
  EXPECT_EQ(parsed.front_matter->closing_line, 3u);
  EXPECT_EQ(parsed.front_matter->find("name")->line, 2u);
}

TEST(FrontMatterTest, BlockIndicatorsAndLookAlikes) {
  const FrontMatterParse parsed = parse_front_matter(
      "---  \n"
      "a: >-\n  one\n  two\n"
      "b: |+ # keep\n  x\n  y\n"
      "c: >50 lots\n"
      "d: |2\n  kept\n"
      "e: 'it''s' # comment\n"
      "tags:\n  - one\n  - two\n"
      "f: \"a # not a comment\"\n"
      "---\nBody");
  ASSERT_TRUE(parsed.front_matter.has_value()) << parsed.line << ": " << parsed.why;
  const FrontMatter& front_matter = *parsed.front_matter;
  EXPECT_EQ(front_matter.find("a")->value, "one two");
  EXPECT_EQ(front_matter.find("b")->value, "x\ny");
  EXPECT_EQ(front_matter.find("c")->value, ">50 lots");
  EXPECT_EQ(front_matter.find("d")->value, "kept");
  EXPECT_EQ(front_matter.find("e")->value, "it's");
  EXPECT_EQ(front_matter.find("tags")->value, "");
  EXPECT_EQ(front_matter.find("f")->value, "a # not a comment");
  EXPECT_EQ(front_matter.find("g"), nullptr);
  EXPECT_EQ(front_matter.body, "Body");
}

TEST(FrontMatterTest, AnEmptyDocumentHasNoFrontMatter) {
  const FrontMatterParse parsed = parse_front_matter("");
  EXPECT_FALSE(parsed.front_matter.has_value());
}

}  // namespace
}  // namespace deskd::desk
