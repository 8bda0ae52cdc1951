// read_file: numbered lines like `cat -n`, windows with a note, binary refusal, and the
// policy's refusals word for word.

#include <sys/stat.h>

#include <string>

#include "unit/tools/file_tools_fixture.h"

namespace {

using deskd::policy::testing::kSecret;
using deskd::policy::testing::make_symlink;
using deskd::policy::testing::write_file;
using deskd::tools::ReadFileTool;
using deskd::tools::testing::FileToolsFixture;
using ::testing::HasSubstr;
using ::testing::Not;

class ReadFileTest : public FileToolsFixture {
 protected:
  // "line 1\n" ... "line <count>\n"
  static std::string numbered_lines(int count) {
    std::string text;
    for (int line = 1; line <= count; ++line) text += "line " + std::to_string(line) + "\n";
    return text;
  }
  static std::string cat_n(int number, const std::string& line) {
    std::string text = std::to_string(number);
    return std::string(6 - std::min<std::size_t>(6, text.size()), ' ') + text + "\t" + line + "\n";
  }
};

TEST_F(ReadFileTest, NumbersLinesLikeCatN) {
  write_file(desk() / "notes" / "a.md", "first\n\tindented\n\nlast without newline");
  const auto result = read({{"path", "notes/a.md"}});
  EXPECT_FALSE(result.is_error) << result.text;
  EXPECT_FALSE(result.truncated);
  EXPECT_EQ(result.text, "     1\tfirst\n     2\t\tindented\n     3\t\n     4\tlast without newline\n");
}

TEST_F(ReadFileTest, RelativePathsStartAtTheDeskAndAbsolutePathsWork) {
  EXPECT_EQ(read({{"path", "plan.md"}}).text, "     1\tThe user's plan.\n");
  EXPECT_EQ(read({{"path", (desk() / "plan.md").native()}}).text, "     1\tThe user's plan.\n");
  make_symlink("plan.md", desk() / "alias.md");
  EXPECT_EQ(read({{"path", "alias.md"}}).text, "     1\tThe user's plan.\n");
}

TEST_F(ReadFileTest, HiddenPathsAreRefusedWithThePolicyMessage) {
  make_symlink(secret_key(), desk() / "scratch" / "key_link");
  for (const std::string& requested : {secret_key().native(), token().native(), std::string("../secrets/key.txt"),
                                      std::string("scratch/key_link"), std::string("../secrets")}) {
    const auto result = read({{"path", requested}});
    EXPECT_TRUE(result.is_error);
    EXPECT_EQ(result.text, requested + " holds secrets and cannot be read.");
    EXPECT_THAT(result.text, Not(HasSubstr(std::string(kSecret))));
  }
}

TEST_F(ReadFileTest, MissingFilesAndFoldersGetAClearSentence) {
  auto result = read({{"path", "nope.txt"}});
  EXPECT_TRUE(result.is_error);
  EXPECT_EQ(result.text, "nope.txt does not exist.");
  result = read({{"path", "notes"}});
  EXPECT_TRUE(result.is_error);
  EXPECT_EQ(result.text, "notes is a folder, not a file. List it with list_directory.");
}

TEST_F(ReadFileTest, SpecialFilesAreRefusedWithoutHanging) {
  const auto fifo = desk() / "scratch" / "pipe";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const auto result = read({{"path", "scratch/pipe"}});
  EXPECT_TRUE(result.is_error);
  EXPECT_THAT(result.text, HasSubstr("is not a regular file"));
}

TEST_F(ReadFileTest, EmptyFile) {
  write_file(desk() / "notes" / "empty.md", "");
  const auto result = read({{"path", "notes/empty.md"}});
  EXPECT_FALSE(result.is_error);
  EXPECT_EQ(result.text, "notes/empty.md is empty.");
  EXPECT_EQ(read({{"path", "notes/empty.md"}, {"offset", 5}}).text, "notes/empty.md is empty.");
}

TEST_F(ReadFileTest, ANewlineAloneIsOneEmptyLine) {
  write_file(desk() / "notes" / "n.md", "\n");
  EXPECT_EQ(read({{"path", "notes/n.md"}}).text, "     1\t\n");
}

const std::string kBinaryMessage =
    " is a binary file, not UTF-8 text, so read_file does not show it; inspect it with bash (file, xxd, strings) "
    "instead.";

TEST_F(ReadFileTest, RefusesANulByteInTheFirst8KiB) {
  write_file(desk() / "scratch" / "image.png", std::string("\x89PNG\r\n\x1a\n\0\0\0\rIHDR", 16));
  auto result = read({{"path", "scratch/image.png"}});
  EXPECT_TRUE(result.is_error);
  EXPECT_EQ(result.text, "scratch/image.png" + kBinaryMessage);

  // Still refused when the window (one line) ends long before the NUL.
  write_file(desk() / "scratch" / "late.bin", "text\n" + std::string(8000, 'x') + std::string(1, '\0') + "\n");
  result = read({{"path", "scratch/late.bin"}, {"limit", 1}});
  EXPECT_TRUE(result.is_error);
  EXPECT_EQ(result.text, "scratch/late.bin" + kBinaryMessage);
}

TEST_F(ReadFileTest, ANulPastThe8KiBProbeIsShownAsText) {
  const std::string text = std::string(9000, 'x') + "\n" + std::string("a\0b", 3) + "\n";
  write_file(desk() / "scratch" / "late_nul.txt", text);
  const auto result = read({{"path", "scratch/late_nul.txt"}});
  EXPECT_FALSE(result.is_error) << result.text;
  EXPECT_THAT(result.text, HasSubstr(std::string("     2\ta\0b\n", 11)));
}

TEST_F(ReadFileTest, RefusesInvalidUtf8) {
  for (const std::string& bytes : {std::string("caf\xe9\n"), std::string("\xff\xfe"), std::string("ok\xe2\x82"),
                                  std::string("\xed\xa0\x80 surrogate\n"), std::string("\xc0\xaf overlong\n")}) {
    write_file(desk() / "scratch" / "latin1.txt", bytes);
    const auto result = read({{"path", "scratch/latin1.txt"}});
    EXPECT_TRUE(result.is_error) << result.text;
    EXPECT_EQ(result.text, "scratch/latin1.txt" + kBinaryMessage);
  }
  // Invalid bytes inside the window are refused even past the first 8 KiB.
  write_file(desk() / "scratch" / "late.txt", std::string(10000, 'x') + "\n\xff\n");
  EXPECT_TRUE(read({{"path", "scratch/late.txt"}}).is_error);
}

TEST_F(ReadFileTest, ValidUtf8IsShown) {
  write_file(desk() / "notes" / "u.md", "₹ 100 — नमस्ते 🙂\n");
  EXPECT_EQ(read({{"path", "notes/u.md"}}).text, "     1\t₹ 100 — नमस्ते 🙂\n");
}

TEST_F(ReadFileTest, LongFilesComeBackInWindowsOf2000Lines) {
  write_file(desk() / "notes" / "big.md", numbered_lines(2500));
  auto result = read({{"path", "notes/big.md"}});
  EXPECT_FALSE(result.is_error);
  EXPECT_TRUE(result.truncated);
  EXPECT_THAT(result.text, HasSubstr(cat_n(1, "line 1")));
  EXPECT_THAT(result.text, HasSubstr(cat_n(2000, "line 2000")));
  EXPECT_THAT(result.text, Not(HasSubstr("line 2001")));
  EXPECT_THAT(result.text, ::testing::EndsWith(
                               "  2000\tline 2000\n\n(Showing lines 1-2000 of 2500. To read more of notes/big.md, "
                               "call read_file with offset 2001.)\n"));

  result = read({{"path", "notes/big.md"}, {"offset", 2001}});
  EXPECT_FALSE(result.is_error);
  EXPECT_FALSE(result.truncated);
  EXPECT_THAT(result.text, ::testing::StartsWith(cat_n(2001, "line 2001")));
  EXPECT_THAT(result.text, ::testing::EndsWith(cat_n(2500, "line 2500")));
}

TEST_F(ReadFileTest, OffsetAndLimitChooseTheWindow) {
  write_file(desk() / "notes" / "n.md", numbered_lines(100));
  auto result = read({{"path", "notes/n.md"}, {"offset", 10}, {"limit", 3}});
  EXPECT_EQ(result.text, cat_n(10, "line 10") + cat_n(11, "line 11") + cat_n(12, "line 12") +
                             "\n(Showing lines 10-12 of 100. To read more of notes/n.md, call read_file with "
                             "offset 13.)\n");
  EXPECT_TRUE(result.truncated);
  // A window that reaches the end has no note.
  result = read({{"path", "notes/n.md"}, {"offset", 99}, {"limit", 5}});
  EXPECT_EQ(result.text, cat_n(99, "line 99") + cat_n(100, "line 100"));
  EXPECT_FALSE(result.truncated);
  // A limit past 2000 is honoured (the byte limit still holds).
  write_file(desk() / "notes" / "big.md", numbered_lines(2500));
  result = read({{"path", "notes/big.md"}, {"limit", 3000}});
  EXPECT_THAT(result.text, ::testing::EndsWith(cat_n(2500, "line 2500")));
}

TEST_F(ReadFileTest, AnOffsetPastTheEndIsAnError) {
  write_file(desk() / "notes" / "n.md", numbered_lines(3));
  const auto result = read({{"path", "notes/n.md"}, {"offset", 7}});
  EXPECT_TRUE(result.is_error);
  EXPECT_EQ(result.text, "notes/n.md has 3 lines; offset 7 is past its end.");
  EXPECT_EQ(read({{"path", "notes/n.md"}, {"offset", 3}}).text, cat_n(3, "line 3"));
}

TEST_F(ReadFileTest, AWindowHoldsAtMost256KiB) {
  // 300 lines of 1023 bytes: 256 lines fit in 262144 bytes, the 257th would not.
  std::string text;
  for (int line = 1; line <= 300; ++line) text += std::string(1023, static_cast<char>('a' + line % 26)) + "\n";
  write_file(desk() / "notes" / "wide.md", text);
  const auto result = read({{"path", "notes/wide.md"}});
  EXPECT_FALSE(result.is_error);
  EXPECT_TRUE(result.truncated);
  EXPECT_THAT(result.text, HasSubstr("\n   256\t"));
  EXPECT_THAT(result.text, Not(HasSubstr("\n   257\t")));
  EXPECT_THAT(result.text, ::testing::EndsWith(
                               "\n(Showing lines 1-256 of 300 (a window holds at most 256 KiB). To read more of "
                               "notes/wide.md, call read_file with offset 257.)\n"));
}

TEST_F(ReadFileTest, ALineLongerThanAWindowIsCutBetweenCharacters) {
  // "€" is 3 bytes, so 262144 bytes would end inside a character: 262143 are shown.
  std::string line;
  for (int index = 0; index < 100000; ++index) line += "€";
  write_file(desk() / "notes" / "long.md", line + "\nnext\n");
  const auto result = read({{"path", "notes/long.md"}});
  EXPECT_FALSE(result.is_error);
  EXPECT_TRUE(result.truncated);
  const std::string shown = line.substr(0, 262143);
  EXPECT_EQ(result.text, "     1\t" + shown +
                             "\n\n(Line 1 is longer than 256 KiB, so only its first 262143 bytes are shown; use "
                             "bash to see the rest of it. To read more of notes/long.md, call read_file with "
                             "offset 2.)\n");
  EXPECT_EQ(read({{"path", "notes/long.md"}, {"offset", 2}}).text, "     2\tnext\n");
}

TEST_F(ReadFileTest, AFileMuchLargerThanAWindowIsStreamed) {
  // 40 MB of short lines: only the window is kept, the rest is counted.
  const std::string line(39, 'z');
  std::string text;
  text.reserve(40 * 1000 * 1000);
  while (text.size() < 40 * 1000 * 1000) text += line + "\n";
  write_file(desk() / "scratch" / "huge.log", text);
  const auto result = read({{"path", "scratch/huge.log"}, {"offset", 999990}, {"limit", 2}});
  EXPECT_FALSE(result.is_error) << result.text.substr(0, 200);
  EXPECT_EQ(result.text, "999990\t" + line + "\n999991\t" + line +
                             "\n\n(Showing lines 999990-999991 of 1000000. To read more of scratch/huge.log, call "
                             "read_file with offset 999992.)\n");
}

TEST_F(ReadFileTest, PastTheCountingBudgetTheNoteSaysTheFileGoesOn) {
  // After the window, lines are counted for at most 64 MiB more; a bigger file is not read
  // to its end just to give the total.
  const std::string line(63, 'q');
  std::string text;
  text.reserve(70u << 20);
  while (text.size() < (70u << 20)) text += line + "\n";
  write_file(desk() / "scratch" / "endless.log", text);
  const auto result = read({{"path", "scratch/endless.log"}, {"limit", 1}});
  EXPECT_TRUE(result.truncated);
  EXPECT_EQ(result.text, "     1\t" + line +
                             "\n\n(Showing lines 1-1; the file goes on. To read more of scratch/endless.log, call "
                             "read_file with offset 2.)\n");
}

TEST_F(ReadFileTest, MalformedInputNamesTheField) {
  const std::string needs_path = "read_file needs a string 'path'.";
  EXPECT_EQ(read({}).text, needs_path);
  EXPECT_EQ(read({{"path", 42}}).text, needs_path);
  EXPECT_EQ(read({{"path", nullptr}}).text, needs_path);
  EXPECT_EQ(read({{"path", boost::json::array{"plan.md"}}}).text, needs_path);
  EXPECT_EQ(read({{"file", "plan.md"}}).text, needs_path);
  const std::string needs_offset = "read_file needs 'offset' to be a whole number of at least 1.";
  for (const boost::json::value& offset : {boost::json::value("3"), boost::json::value(0), boost::json::value(-1),
                                          boost::json::value(1.5), boost::json::value(true)}) {
    const auto result = read({{"path", "plan.md"}, {"offset", offset}});
    EXPECT_TRUE(result.is_error);
    EXPECT_EQ(result.text, needs_offset) << offset;
  }
  EXPECT_EQ(read({{"path", "plan.md"}, {"limit", "ten"}}).text,
            "read_file needs 'limit' to be a whole number of at least 1.");
  EXPECT_EQ(read({{"path", ""}}).text, "An empty path names no file.");
}

TEST_F(ReadFileTest, LenientWhereItIsSafe) {
  // Whole doubles, nulls for optional fields, and unknown fields are all fine.
  const auto result = read({{"path", "plan.md"}, {"offset", 1.0}, {"limit", nullptr}, {"mood", "curious"}});
  EXPECT_FALSE(result.is_error) << result.text;
  EXPECT_EQ(result.text, "     1\tThe user's plan.\n");
  EXPECT_FALSE(read({{"path", "plan.md"}, {"limit", std::uint64_t{18446744073709551615ULL}}}).is_error);
}

}  // namespace
