// The unified diff a person reads before accepting a proposal: diff -u's format, minimal
// where it can be, correct always (checked by applying it).

#include "runner/tools/unified_diff.h"

#include <gtest/gtest.h>

#include <random>
#include <sstream>
#include <string>
#include <vector>

namespace {

using deskd::tools::unified_diff;

std::string lines(int first, int last, const std::string& prefix = "") {
  std::string text;
  for (int line = first; line <= last; ++line) text += prefix + std::to_string(line) + "\n";
  return text;
}

TEST(UnifiedDiff, EqualTextsHaveNoDiff) { EXPECT_EQ(unified_diff("a\n", "a\n", "f"), ""); }

TEST(UnifiedDiff, OneChangeWithThreeLinesOfContext) {
  std::string changed = lines(1, 10);
  changed.replace(changed.find("5\n"), 2, "five\n");
  EXPECT_EQ(unified_diff(lines(1, 10), changed, "x/f.txt"),
            "--- a/x/f.txt\n+++ b/x/f.txt\n@@ -2,7 +2,7 @@\n 2\n 3\n 4\n-5\n+five\n 6\n 7\n 8\n");
}

TEST(UnifiedDiff, DistantChangesMakeTwoHunksAndNearOnesOne) {
  std::string far = lines(1, 20);
  far.replace(far.find("2\n"), 2, "two\n");
  far.replace(far.find("19\n"), 3, "nineteen\n");
  EXPECT_EQ(unified_diff(lines(1, 20), far, "f"),
            "--- a/f\n+++ b/f\n@@ -1,5 +1,5 @@\n 1\n-2\n+two\n 3\n 4\n 5\n"
            "@@ -16,5 +16,5 @@\n 16\n 17\n 18\n-19\n+nineteen\n 20\n");
  // Six unchanged lines between two changes: their contexts touch, so one hunk.
  std::string near = lines(1, 20);
  near.replace(near.find("\n5\n") + 1, 2, "five\n");
  near.replace(near.find("\n12\n") + 1, 3, "twelve\n");
  EXPECT_EQ(unified_diff(lines(1, 20), near, "f"),
            "--- a/f\n+++ b/f\n@@ -2,14 +2,14 @@\n 2\n 3\n 4\n-5\n+five\n 6\n 7\n 8\n 9\n 10\n 11\n-12\n+twelve\n"
            " 13\n 14\n 15\n");
}

TEST(UnifiedDiff, InsertionsDeletionsAndEmptySides) {
  EXPECT_EQ(unified_diff("", "a\n", "f"), "--- a/f\n+++ b/f\n@@ -0,0 +1 @@\n+a\n");
  EXPECT_EQ(unified_diff("a\nb\n", "", "f"), "--- a/f\n+++ b/f\n@@ -1,2 +0,0 @@\n-a\n-b\n");
  EXPECT_EQ(unified_diff("a\nc\n", "a\nb\nc\n", "f"), "--- a/f\n+++ b/f\n@@ -1,2 +1,3 @@\n a\n+b\n c\n");
}

TEST(UnifiedDiff, MarksAMissingFinalNewline) {
  EXPECT_EQ(unified_diff("a\nb", "a\nb\n", "f"),
            "--- a/f\n+++ b/f\n@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n+b\n");
  EXPECT_EQ(unified_diff("a\n", "a\nb", "f"), "--- a/f\n+++ b/f\n@@ -1 +1,2 @@\n a\n+b\n\\ No newline at end of file\n");
}

// A desk names the file: a newline in the name must not end the header line (and start a
// forged line of the diff). Such names are quoted as git quotes them, which patch reads.
TEST(UnifiedDiff, UnusualNamesAreQuotedInTheHeader) {
  EXPECT_EQ(unified_diff("v1\n", "v2\n", "desk/plan.md"), "--- a/desk/plan.md\n+++ b/desk/plan.md\n@@ -1 +1 @@\n-v1\n+v2\n");
  EXPECT_EQ(unified_diff("v1\n", "v2\n", "योजना ∕ v2.md"), "--- a/योजना ∕ v2.md\n+++ b/योजना ∕ v2.md\n@@ -1 +1 @@\n-v1\n+v2\n");
  EXPECT_EQ(unified_diff("v1\n", "v2\n", "zz\x1b[2K\nwhy \"q\" \\b\t\x7f.md"),
            "--- \"a/zz\\033[2K\\nwhy \\\"q\\\" \\\\b\\t\\177.md\"\n"
            "+++ \"b/zz\\033[2K\\nwhy \\\"q\\\" \\\\b\\t\\177.md\"\n@@ -1 +1 @@\n-v1\n+v2\n");
}

TEST(UnifiedDiff, TooLargeTextsAreNotDiffed) {
  EXPECT_EQ(unified_diff(lines(1, 20001), "x\n", "f"), "(too large to show)");
  EXPECT_EQ(unified_diff("x\n", std::string((1u << 20) + 1, 'y'), "f"), "(too large to show)");
  EXPECT_NE(unified_diff(lines(1, 20000), lines(1, 19999), "f"), "(too large to show)");
}

// Applies a unified diff made by unified_diff (no missing-newline markers) to `old_text`.
std::string apply_diff(const std::string& old_text, const std::string& diff) {
  std::vector<std::string> old_lines;
  std::istringstream old_stream(old_text);
  for (std::string line; std::getline(old_stream, line);) old_lines.push_back(line);
  std::vector<std::string> result;
  std::size_t next_old = 0;  // index of the next old line not yet copied
  std::istringstream diff_stream(diff);
  std::string line;
  std::getline(diff_stream, line);  // ---
  std::getline(diff_stream, line);  // +++
  while (std::getline(diff_stream, line)) {
    if (line.rfind("@@ -", 0) == 0) {
      const std::size_t start = std::stoul(line.substr(4));
      const std::size_t comma = line.find(',');
      const bool empty = comma != std::string::npos && comma < line.find(' ', 4) && line[comma + 1] == '0';
      const std::size_t first = empty ? start : start - 1;
      while (next_old < first) result.push_back(old_lines[next_old++]);
    } else if (line[0] == ' ') {
      EXPECT_EQ(old_lines.at(next_old), line.substr(1));
      result.push_back(old_lines[next_old++]);
    } else if (line[0] == '-') {
      EXPECT_EQ(old_lines.at(next_old), line.substr(1));
      ++next_old;
    } else if (line[0] == '+') {
      result.push_back(line.substr(1));
    }
  }
  while (next_old < old_lines.size()) result.push_back(old_lines[next_old++]);
  std::string text;
  for (const auto& kept : result) text += kept + "\n";
  return text;
}

// Edits a shortest diff needs: lines of either side not in a longest common subsequence.
std::size_t minimal_edits(const std::vector<std::string>& a, const std::vector<std::string>& b) {
  std::vector<std::vector<std::size_t>> lcs(a.size() + 1, std::vector<std::size_t>(b.size() + 1));
  for (std::size_t i = a.size(); i-- > 0;) {
    for (std::size_t j = b.size(); j-- > 0;) {
      lcs[i][j] = a[i] == b[j] ? lcs[i + 1][j + 1] + 1 : std::max(lcs[i + 1][j], lcs[i][j + 1]);
    }
  }
  return a.size() + b.size() - 2 * lcs[0][0];
}

TEST(UnifiedDiff, RandomEditsApplyAndAreMinimal) {
  std::mt19937 random(20240101);
  for (int round = 0; round < 500; ++round) {
    // A small alphabet makes many repeated lines, the hard case for a line diff.
    const auto random_lines = [&](std::size_t count) {
      std::vector<std::string> made;
      for (std::size_t index = 0; index < count; ++index) made.push_back(std::string(1, "abcd"[random() % 4]));
      return made;
    };
    const auto a = random_lines(random() % 30);
    const auto b = random_lines(random() % 30);
    std::string old_text, new_text;
    for (const auto& line : a) old_text += line + "\n";
    for (const auto& line : b) new_text += line + "\n";
    const std::string diff = unified_diff(old_text, new_text, "f");
    SCOPED_TRACE(old_text + "=>\n" + new_text + "diff:\n" + diff);
    EXPECT_EQ(apply_diff(old_text, diff), new_text);
    std::size_t edits = 0;
    std::istringstream stream(diff);
    std::string line;
    for (int index = 0; std::getline(stream, line); ++index) {
      if (index >= 2 && (line[0] == '+' || line[0] == '-')) ++edits;
    }
    EXPECT_EQ(edits, minimal_edits(a, b));
  }
}

TEST(UnifiedDiff, VeryDifferentLargeTextsStillGiveACorrectDiff) {
  // Past the search's edit budget the middle becomes one removal and one addition.
  const std::string old_text = lines(1, 5000, "old ");
  const std::string new_text = lines(1, 5000, "new ");
  const std::string diff = unified_diff(old_text, new_text, "f");
  EXPECT_EQ(apply_diff(old_text, diff), new_text);
}

}  // namespace
