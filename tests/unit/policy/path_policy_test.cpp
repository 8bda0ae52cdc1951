// The seed page (trading_agent.tools.path_policy) is the specification: each of its
// sentences is a test below, quoted in the test's comment, and the two refusal messages
// must match the Python ones exactly, because the model reads them and acts on them.

#include "policy/path_policy.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <limits.h>

#include <string>

#include "unit/policy/desk_fixture.h"

namespace {

using deskd::ErrorCode;
using deskd::policy::PathPolicy;
using deskd::policy::testing::DeskFixture;
using deskd::policy::testing::error_code_of;
using deskd::policy::testing::make_symlink;
using deskd::policy::testing::outcome;
using ::testing::HasSubstr;
using ::testing::StartsWith;
using Path = std::filesystem::path;

class PathPolicyTest : public DeskFixture {
 protected:
  std::string read(std::string_view requested) const { return outcome(policy().readable(requested)); }
  std::string write(std::string_view requested) const { return outcome(policy().writable(requested)); }

  static std::string allowed(const Path& path) { return "allowed: " + path.native(); }
  // The seed's two messages, with the path as requested.
  static std::string cannot_be_read(const std::string& requested) {
    return "refused: " + requested + " holds secrets and cannot be read.";
  }
  static std::string cannot_be_written(const std::string& requested) {
    return "refused: " + requested +
           " cannot be written. You may write only inside memory/, notes/ and scratch/ of your "
           "desk folder, and your Memory.md. Propose changes to the user's files with "
           "propose_file_change.";
  }
};

// "Typical usage example: policy = PathPolicy(desk_directory, hidden_paths)
//  path = policy.readable('Memory.md')"
TEST_F(PathPolicyTest, TypicalUsage) {
  const auto hidden = hidden_paths();
  auto created = PathPolicy::create(desk(), hidden);
  ASSERT_TRUE(created.ok()) << created.error().what;
  EXPECT_EQ(outcome(created->readable("Memory.md")), allowed(desk() / "Memory.md"));
}

// "desk_directory: The desk's own folder, where relative paths start." (resolved)
TEST_F(PathPolicyTest, DeskDirectoryIsTheResolvedDeskFolder) {
  make_symlink(desk(), root() / "desk_link");
  const auto hidden = hidden_paths();
  auto created = PathPolicy::create(root() / "desk_link", hidden);
  ASSERT_TRUE(created.ok()) << created.error().what;
  EXPECT_EQ(created->desk_directory(), desk());
  EXPECT_EQ(outcome(created->writable("notes/a.md")), allowed(desk() / "notes/a.md"));
}

// "hidden_paths: Resolved secret files and folders that may not be read."
TEST_F(PathPolicyTest, HiddenPathsGivenThroughALinkAreStillHidden) {
  make_symlink(secrets(), root() / "secrets_link");
  make_symlink(token(), root() / "token_link");
  const std::vector<Path> hidden{root() / "secrets_link", root() / "token_link"};
  auto created = PathPolicy::create(desk(), hidden);
  ASSERT_TRUE(created.ok()) << created.error().what;
  EXPECT_EQ(outcome(created->readable(secret_key().native())), cannot_be_read(secret_key().native()));
  EXPECT_EQ(outcome(created->readable("../token.txt")), cannot_be_read("../token.txt"));
  EXPECT_EQ(outcome(created->readable("../secrets_link/key.txt")), cannot_be_read("../secrets_link/key.txt"));
}

TEST_F(PathPolicyTest, CreateRefusesAMissingDeskFolder) {
  EXPECT_EQ(error_code_of(PathPolicy::create(root() / "nowhere", {})), ErrorCode::not_found);
}

// "A relative path is taken from the desk's own folder, so "Memory.md" and
//  "notes/today.md" mean the desk's files."
TEST_F(PathPolicyTest, RelativePathIsTakenFromTheDeskFolder) {
  EXPECT_EQ(read("Memory.md"), allowed(desk() / "Memory.md"));
  EXPECT_EQ(read("notes/today.md"), allowed(desk() / "notes/today.md"));
  EXPECT_EQ(write("Memory.md"), allowed(desk() / "Memory.md"));
  EXPECT_EQ(write("notes/today.md"), allowed(desk() / "notes/today.md"));
}

// "Every path is resolved to where it really is before it is checked, so neither "../"
//  nor a link can lead outside the allowed places."
TEST_F(PathPolicyTest, DotDotCannotLeadOutsideTheAllowedPlaces) {
  EXPECT_EQ(read("../secrets/key.txt"), cannot_be_read("../secrets/key.txt"));
  EXPECT_EQ(read("notes/../../secrets"), cannot_be_read("notes/../../secrets"));
  EXPECT_EQ(read("notes/new/../../../token.txt"), cannot_be_read("notes/new/../../../token.txt"));
  EXPECT_EQ(write("scratch/../plan.md"), cannot_be_written("scratch/../plan.md"));
  EXPECT_EQ(write("notes/../../outside.md"), cannot_be_written("notes/../../outside.md"));
  EXPECT_EQ(write("notes/.."), cannot_be_written("notes/.."));
}

TEST_F(PathPolicyTest, DotDotThatStaysInsideIsResolved) {
  EXPECT_EQ(write("notes/../scratch/a.txt"), allowed(desk() / "scratch/a.txt"));
  EXPECT_EQ(write("scratch/sub/../../Memory.md"), allowed(desk() / "Memory.md"));
}

TEST_F(PathPolicyTest, LinkInScratchCannotLeadToHiddenPaths) {
  make_symlink(secrets(), desk() / "scratch/to_secrets");     // absolute target
  make_symlink("../../token.txt", desk() / "scratch/to_token");  // relative target
  EXPECT_EQ(read("scratch/to_secrets"), cannot_be_read("scratch/to_secrets"));
  EXPECT_EQ(read("scratch/to_secrets/key.txt"), cannot_be_read("scratch/to_secrets/key.txt"));
  EXPECT_EQ(read("scratch/to_token"), cannot_be_read("scratch/to_token"));
  // A missing folder undone by `..` must not hide the link after it from resolution.
  EXPECT_EQ(read("scratch/nope/../to_secrets/key.txt"), cannot_be_read("scratch/nope/../to_secrets/key.txt"));
}

TEST_F(PathPolicyTest, LinkInScratchToTheDeskRootCannotLeadWritesOut) {
  make_symlink(desk(), desk() / "scratch/to_desk");
  EXPECT_EQ(write("scratch/to_desk/plan.md"), cannot_be_written("scratch/to_desk/plan.md"));
  EXPECT_EQ(write("scratch/to_desk/new.md"), cannot_be_written("scratch/to_desk/new.md"));
  EXPECT_EQ(write("scratch/to_desk/scratch"), cannot_be_written("scratch/to_desk/scratch"));
  // Where the link really leads is judged, so a real writable place through it is fine.
  EXPECT_EQ(write("scratch/to_desk/notes/a.md"), allowed(desk() / "notes/a.md"));
}

TEST_F(PathPolicyTest, LinkInScratchToHiddenPathsCannotBeWritten) {
  make_symlink(secrets(), desk() / "scratch/to_secrets");
  EXPECT_EQ(write("scratch/to_secrets/key.txt"), cannot_be_written("scratch/to_secrets/key.txt"));
  EXPECT_EQ(write("scratch/to_secrets/new.txt"), cannot_be_written("scratch/to_secrets/new.txt"));
}

// "Reading is allowed anywhere except the hidden secret files and folders that the bash
//  sandbox also hides."
TEST_F(PathPolicyTest, ReadingIsAllowedAnywhereElse) {
  EXPECT_EQ(read("plan.md"), allowed(desk() / "plan.md"));
  EXPECT_EQ(read("."), allowed(desk()));
  EXPECT_EQ(read(".."), allowed(root()));
  EXPECT_EQ(read("../secrets-public/x"), allowed(root() / "secrets-public/x"));
  EXPECT_EQ(read("../token.txt.bak"), allowed(root() / "token.txt.bak"));
  EXPECT_EQ(read("/"), allowed("/"));
  EXPECT_EQ(read("/usr"), allowed("/usr"));
}

TEST_F(PathPolicyTest, ReadingAHiddenFolderOrAnythingInsideItIsRefused) {
  EXPECT_EQ(read("../secrets"), cannot_be_read("../secrets"));
  EXPECT_EQ(read("../secrets/"), cannot_be_read("../secrets/"));
  EXPECT_EQ(read("../secrets/key.txt"), cannot_be_read("../secrets/key.txt"));
  EXPECT_EQ(read("../secrets/missing/deeper"), cannot_be_read("../secrets/missing/deeper"));
}

TEST_F(PathPolicyTest, ReadingAHiddenFileIsRefused) {
  EXPECT_EQ(read("../token.txt"), cannot_be_read("../token.txt"));
  EXPECT_EQ(read(token().native()), cannot_be_read(token().native()));
}

// "Writing is allowed only in the desk's memory, notes and scratch folders and its
//  Memory.md."
TEST_F(PathPolicyTest, WritingIsAllowedInsideTheThreeFoldersAndMemoryMd) {
  EXPECT_EQ(write("Memory.md"), allowed(desk() / "Memory.md"));
  EXPECT_EQ(write("./Memory.md"), allowed(desk() / "Memory.md"));
  EXPECT_EQ(write("memory/2024-06-01.md"), allowed(desk() / "memory/2024-06-01.md"));
  EXPECT_EQ(write("notes/deep/er/a.md"), allowed(desk() / "notes/deep/er/a.md"));
  EXPECT_EQ(write("scratch/x"), allowed(desk() / "scratch/x"));
  EXPECT_EQ(write("notes//b.md"), allowed(desk() / "notes/b.md"));
}

TEST_F(PathPolicyTest, WritingTheFoldersThemselvesIsRefused) {
  for (const char* requested : {"memory", "notes", "notes/", "scratch", "scratch/.", "."}) {
    EXPECT_EQ(write(requested), cannot_be_written(requested));
  }
}

TEST_F(PathPolicyTest, WritingLookAlikesIsRefused) {
  for (const char* requested :
       {"Memory.md.bak", "memory.md", "memoryx/a", "notesx/a", "scratch2/a", "Memory.md2", "../notes/a"}) {
    EXPECT_EQ(write(requested), cannot_be_written(requested));
  }
}

// "The user's files can only be changed through propose_file_change."
TEST_F(PathPolicyTest, UsersFilesAreChangedOnlyThroughProposeFileChange) {
  EXPECT_EQ(write("plan.md"), cannot_be_written("plan.md"));
  EXPECT_EQ(write("new_user_file.md"), cannot_be_written("new_user_file.md"));
  EXPECT_THAT(write("plan.md"), HasSubstr("propose_file_change"));
}

TEST_F(PathPolicyTest, AbsolutePathsIntoTheDeskAreJudgedLikeRelativeOnes) {
  const std::string memory = (desk() / "Memory.md").native();
  const std::string note = (desk() / "notes/a.md").native();
  const std::string plan = (desk() / "plan.md").native();
  EXPECT_EQ(write(memory), allowed(memory));
  EXPECT_EQ(write(note), allowed(note));
  EXPECT_EQ(write(plan), cannot_be_written(plan));
  EXPECT_EQ(read(plan), allowed(plan));
}

TEST_F(PathPolicyTest, AbsolutePathsOutOfTheDeskCannotBeWritten) {
  for (const std::string& requested : {std::string("/etc/passwd"), (root() / "outside.md").native(),
                                       secret_key().native(), std::string("/")}) {
    EXPECT_EQ(write(requested), cannot_be_written(requested));
  }
}

// The seed never needs this, but the sandbox hides a secret inside a writable folder too.
TEST_F(PathPolicyTest, HiddenPathInsideAWritableFolderCannotBeWritten) {
  std::filesystem::create_directory(desk() / "scratch/private");
  const std::vector<Path> hidden{secrets(), desk() / "scratch/private"};
  auto created = PathPolicy::create(desk(), hidden);
  ASSERT_TRUE(created.ok()) << created.error().what;
  EXPECT_EQ(outcome(created->writable("scratch/private/a.txt")),
            "refused: scratch/private/a.txt holds secrets and cannot be written.");
  EXPECT_EQ(outcome(created->readable("scratch/private/a.txt")),
            cannot_be_read("scratch/private/a.txt"));
  EXPECT_EQ(outcome(created->writable("scratch/public.txt")), allowed(desk() / "scratch/public.txt"));
}

// "PathRefusedError: A file tool asked for a path it may not use."
TEST_F(PathPolicyTest, RefusalsCarryTheRefusedCode) {
  EXPECT_EQ(error_code_of(policy().readable("../secrets")), ErrorCode::refused);
  EXPECT_EQ(error_code_of(policy().writable("plan.md")), ErrorCode::refused);
}

// Malformed requests are an Error with a sentence, never an exception or a crash: the
// model wrote them, and the tool must answer.
TEST_F(PathPolicyTest, BadInputsAreErrorsWithAClearSentence) {
  make_symlink("loop_b", desk() / "scratch/loop_a");
  make_symlink("loop_a", desk() / "scratch/loop_b");
  const std::string memory_file = (desk() / "Memory.md").native();
  struct Case {
    std::string requested;
    ErrorCode code;
    std::string message;
  };
  const std::vector<Case> cases{
      {"", ErrorCode::invalid_argument, "refused: An empty path names no file."},
      {std::string("notes/a\0.md", 11), ErrorCode::invalid_argument,
       "refused: notes/a\\x00.md contains a NUL byte, which no path may hold."},
      {std::string(PATH_MAX, 'a'), ErrorCode::invalid_argument,
       "refused: The path is " + std::to_string(PATH_MAX) + " bytes long; a path may be at most " +
           std::to_string(PATH_MAX - 1) + " bytes."},
      {"scratch/loop_a/x", ErrorCode::refused,
       "refused: scratch/loop_a/x cannot be resolved: it leads into a loop of symbolic links."},
      {"Memory.md/x", ErrorCode::refused,
       "refused: Memory.md/x goes through " + memory_file + ", which is a file, not a folder."},
      {"notes/\xfe\xff.md", ErrorCode::invalid_argument, "refused: notes/\\xfe\\xff.md is not valid UTF-8."},
  };
  for (const auto& bad : cases) {
    for (const bool reading : {true, false}) {
      SCOPED_TRACE((reading ? "read " : "write ") + bad.message);
      deskd::Result<Path> result = Path();
      EXPECT_NO_THROW(result = reading ? policy().readable(bad.requested) : policy().writable(bad.requested));
      EXPECT_EQ(error_code_of(result), bad.code);
      EXPECT_EQ(outcome(result), bad.message);
    }
  }
}

TEST_F(PathPolicyTest, LongComponentIsAnErrorNotACrash) {
  const std::string requested = "notes/" + std::string(300, 'n');
  const auto result = policy().readable(requested);
  ASSERT_FALSE(result.ok());
  EXPECT_THAT(result.error().what, StartsWith(requested + " cannot be resolved"));
}

}  // namespace
