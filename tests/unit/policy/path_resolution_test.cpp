// resolve_path must agree with Python's Path.resolve(strict=False), which the seed's policy
// relies on, except that it refuses what Python would silently accept (loops, paths through
// a file, malformed input). The helpers are tested here so the policy tests can trust them.

#include "policy/path_resolution.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <limits.h>

#include <string>

#include "unit/policy/desk_fixture.h"

namespace {

using deskd::ErrorCode;
using deskd::policy::is_same_or_inside;
using deskd::policy::is_strictly_inside;
using deskd::policy::printable_path;
using deskd::policy::resolve_path;
using deskd::policy::validate_requested_path;
using deskd::policy::testing::DeskFixture;
using deskd::policy::testing::error_code_of;
using deskd::policy::testing::make_symlink;
using deskd::policy::testing::outcome;
using ::testing::HasSubstr;
using Path = std::filesystem::path;

class PathResolutionTest : public DeskFixture {
 protected:
  // The resolution of `requested` from the desk folder, as "allowed: <path>" or the error.
  std::string resolved(std::string_view requested) const { return outcome(resolve_path(requested, desk())); }
  std::string allowed(const Path& path) const { return "allowed: " + path.native(); }
};

TEST_F(PathResolutionTest, RelativePathStartsAtTheBaseFolder) {
  EXPECT_EQ(resolved("Memory.md"), allowed(desk() / "Memory.md"));
  EXPECT_EQ(resolved("notes/today.md"), allowed(desk() / "notes/today.md"));
}

TEST_F(PathResolutionTest, AbsolutePathIgnoresTheBaseFolder) {
  EXPECT_EQ(resolved(secret_key().native()), allowed(secret_key()));
}

TEST_F(PathResolutionTest, DotDotClimbsToTheParent) {
  EXPECT_EQ(resolved(".."), allowed(root()));
  EXPECT_EQ(resolved("../secrets/key.txt"), allowed(secret_key()));
  EXPECT_EQ(resolved("notes/a/b/../../../plan.md"), allowed(desk() / "plan.md"));
}

TEST_F(PathResolutionTest, DotDotAboveTheRootStaysAtTheRoot) {
  std::string many_ups;
  for (int index = 0; index < 64; ++index) many_ups += "../";
  EXPECT_EQ(resolved(many_ups), allowed("/"));
  EXPECT_EQ(resolved(many_ups + "tmp"), allowed("/tmp"));
  EXPECT_EQ(resolved("/../../.."), allowed("/"));
}

TEST_F(PathResolutionTest, DotIsSkipped) {
  EXPECT_EQ(resolved("."), allowed(desk()));
  EXPECT_EQ(resolved("./notes/./a.md/."), allowed(desk() / "notes/a.md"));
}

TEST_F(PathResolutionTest, TrailingAndDoubleSlashesAreIgnored) {
  EXPECT_EQ(resolved("notes/"), allowed(desk() / "notes"));
  EXPECT_EQ(resolved("notes///"), allowed(desk() / "notes"));
  EXPECT_EQ(resolved("notes//a.md"), allowed(desk() / "notes/a.md"));
  EXPECT_EQ(resolved("/" + desk().native() + "//plan.md"), allowed(desk() / "plan.md"));
}

TEST_F(PathResolutionTest, RelativeLinkTargetStartsAtTheLinksFolder) {
  make_symlink("../notes", desk() / "scratch/to_notes");
  EXPECT_EQ(resolved("scratch/to_notes/a.md"), allowed(desk() / "notes/a.md"));
  EXPECT_EQ(resolved("scratch/to_notes"), allowed(desk() / "notes"));
}

TEST_F(PathResolutionTest, AbsoluteLinkTargetReplacesThePath) {
  make_symlink(secrets(), desk() / "scratch/to_secrets");
  EXPECT_EQ(resolved("scratch/to_secrets/key.txt"), allowed(secret_key()));
}

TEST_F(PathResolutionTest, LinkChainsAreFollowedToTheEnd) {
  make_symlink("second", desk() / "scratch/first");
  make_symlink("../../token.txt", desk() / "scratch/second");
  EXPECT_EQ(resolved("scratch/first"), allowed(token()));
}

TEST_F(PathResolutionTest, DotDotAfterALinkClimbsFromItsRealTarget) {
  // The kernel applies `..` to where the link leads, not lexically; so must we, or
  // "scratch/deep/.." would look like the desk's scratch folder.
  std::filesystem::create_directories(root() / "elsewhere/deep");
  make_symlink(root() / "elsewhere/deep", desk() / "scratch/deep");
  EXPECT_EQ(resolved("scratch/deep/.."), allowed(root() / "elsewhere"));
  EXPECT_EQ(resolved("scratch/deep/../../secrets"), allowed(secrets()));
}

TEST_F(PathResolutionTest, MissingComponentsAreAppendedAsWritten) {
  EXPECT_EQ(resolved("notes/new/deeper/file.md"), allowed(desk() / "notes/new/deeper/file.md"));
  EXPECT_EQ(resolved("notes/new/deeper/../file.md"), allowed(desk() / "notes/new/file.md"));
}

TEST_F(PathResolutionTest, LinksCountAgainOnceDotDotClimbsAboveAMissingComponent) {
  // Python resolves "missing/../link" by following the link; taking "link" as written
  // would let "scratch/nope/../to_secrets/key.txt" pass for a path inside scratch/.
  make_symlink(secrets(), desk() / "scratch/to_secrets");
  EXPECT_EQ(resolved("scratch/nope/../to_secrets/key.txt"), allowed(secret_key()));
  EXPECT_EQ(resolved("scratch/nope/more/../../to_secrets"), allowed(secrets()));
}

TEST_F(PathResolutionTest, SymlinkLoopIsRefused) {
  make_symlink("loop_b", desk() / "scratch/loop_a");
  make_symlink("loop_a", desk() / "scratch/loop_b");
  make_symlink("self", desk() / "scratch/self");
  for (const char* requested : {"scratch/loop_a", "scratch/loop_b/x", "scratch/self"}) {
    const auto result = resolve_path(requested, desk());
    EXPECT_EQ(error_code_of(result), ErrorCode::refused) << requested;
    EXPECT_EQ(outcome(result), std::string("refused: ") + requested +
                                   " cannot be resolved: it leads into a loop of symbolic links.");
  }
}

TEST_F(PathResolutionTest, PathThroughAFileIsRefused) {
  const auto result = resolve_path("Memory.md/x", desk());
  EXPECT_EQ(error_code_of(result), ErrorCode::refused);
  EXPECT_EQ(outcome(result), "refused: Memory.md/x goes through " + (desk() / "Memory.md").native() +
                                 ", which is a file, not a folder.");
  // The same through a link that leads to a file.
  make_symlink("../plan.md", desk() / "scratch/to_plan");
  EXPECT_THAT(outcome(resolve_path("scratch/to_plan/x", desk())), HasSubstr("which is a file"));
}

TEST_F(PathResolutionTest, EmptyPathIsRefused) {
  const auto result = resolve_path("", desk());
  EXPECT_EQ(error_code_of(result), ErrorCode::invalid_argument);
  EXPECT_EQ(outcome(result), "refused: An empty path names no file.");
}

TEST_F(PathResolutionTest, NulByteIsRefused) {
  const std::string with_nul("notes/a\0b.md", 12);
  const auto result = resolve_path(with_nul, desk());
  EXPECT_EQ(error_code_of(result), ErrorCode::invalid_argument);
  EXPECT_EQ(outcome(result), "refused: notes/a\\x00b.md contains a NUL byte, which no path may hold.");
}

TEST_F(PathResolutionTest, PathOfPathMaxBytesIsRefusedAndOneShorterIsResolved) {
  // Short components: a single long name would fail for NAME_MAX, not PATH_MAX.
  std::string longest = "/deskd-missing";
  while (longest.size() < PATH_MAX - 1) longest += "/abcdefg";
  longest.resize(PATH_MAX - 1);
  if (longest.back() == '/') longest.back() = 'z';
  EXPECT_TRUE(validate_requested_path(longest).ok());
  EXPECT_EQ(resolved(longest), allowed(longest));

  const std::string too_long = longest + "z";
  const auto result = resolve_path(too_long, desk());
  EXPECT_EQ(error_code_of(result), ErrorCode::invalid_argument);
  EXPECT_EQ(outcome(result), "refused: The path is " + std::to_string(PATH_MAX) +
                                 " bytes long; a path may be at most " +
                                 std::to_string(PATH_MAX - 1) + " bytes.");
}

TEST_F(PathResolutionTest, InvalidUtf8IsRefusedWithTheBytesEscaped) {
  for (const std::string requested : {"notes/\xff.md", "notes/\xc0\xaf", "notes/\xed\xa0\x80", "\xe2\x82"}) {
    const auto result = resolve_path(requested, desk());
    EXPECT_EQ(error_code_of(result), ErrorCode::invalid_argument);
    EXPECT_EQ(outcome(result), "refused: " + printable_path(requested) + " is not valid UTF-8.");
  }
  EXPECT_EQ(outcome(resolve_path("notes/\xff.md", desk())),
            "refused: notes/\\xff.md is not valid UTF-8.");
}

TEST_F(PathResolutionTest, ValidUtf8IsAccepted) {
  EXPECT_EQ(resolved("notes/caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x93\x88.md"),
            allowed(desk() / "notes/caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x93\x88.md"));
}

TEST(PrintablePathTest, KeepsPrintableTextAndEscapesTheRest) {
  EXPECT_EQ(printable_path("notes/today.md"), "notes/today.md");
  EXPECT_EQ(printable_path("caf\xc3\xa9"), "caf\xc3\xa9");
  EXPECT_EQ(printable_path("a\xff" "b"), "a\\xffb");
  EXPECT_EQ(printable_path("a\nb\tc\x7f"), "a\\x0ab\\x09c\\x7f");
  EXPECT_EQ(printable_path(std::string("a\0b", 3)), "a\\x00b");
  EXPECT_EQ(printable_path("\xc0\xaf"), "\\xc0\\xaf");  // overlong "/" must not become one
  EXPECT_EQ(printable_path("\xe2\x82"), "\\xe2\\x82");  // cut-off sequence
  EXPECT_EQ(printable_path(""), "");
}

TEST(ValidateRequestedPathTest, AcceptsOrdinaryPaths) {
  EXPECT_TRUE(validate_requested_path("Memory.md").ok());
  EXPECT_TRUE(validate_requested_path("/").ok());
  EXPECT_TRUE(validate_requested_path("..").ok());
}

TEST(IsSameOrInsideTest, ComparesWholeComponents) {
  EXPECT_TRUE(is_same_or_inside("/a/secret", "/a/secret"));
  EXPECT_TRUE(is_same_or_inside("/a/secret/key", "/a/secret"));
  EXPECT_FALSE(is_same_or_inside("/a/secrets-public", "/a/secret"));
  EXPECT_FALSE(is_same_or_inside("/a/secrets-public/x", "/a/secret"));
  EXPECT_FALSE(is_same_or_inside("/a", "/a/secret"));
  EXPECT_TRUE(is_same_or_inside("/a", "/"));
  EXPECT_TRUE(is_same_or_inside("/", "/"));
}

TEST(IsStrictlyInsideTest, ExcludesThePlaceItself) {
  EXPECT_FALSE(is_strictly_inside("/d/notes", "/d/notes"));
  EXPECT_TRUE(is_strictly_inside("/d/notes/a", "/d/notes"));
  EXPECT_FALSE(is_strictly_inside("/d/notesx/a", "/d/notes"));
  EXPECT_FALSE(is_strictly_inside("/d", "/d/notes"));
  EXPECT_TRUE(is_strictly_inside("/d", "/"));
  EXPECT_FALSE(is_strictly_inside("/", "/"));
}

}  // namespace
