// Confinement is decided once and then trusted by the sandbox and the file tools alike, so
// every path it holds must already be resolved, and a configuration that would make the
// rules meaningless (no desk, a hidden desk, a writable place that leads elsewhere) must
// be refused when it is built rather than discovered later.

#include "policy/confinement.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <stdexcept>
#include <vector>

#include "unit/policy/desk_fixture.h"

namespace {

using deskd::ErrorCode;
using deskd::policy::Confinement;
using deskd::policy::WritablePlace;
using deskd::policy::testing::DeskFixture;
using deskd::policy::testing::error_code_of;
using deskd::policy::testing::make_symlink;
using deskd::policy::testing::write_file;
using ::testing::HasSubstr;
using ::testing::StartsWith;
using Path = std::filesystem::path;

class ConfinementTest : public DeskFixture {
 protected:
  // The confinement for `desk` and `hidden`. Throws when it cannot be built, which fails
  // the test with the reason (an ASSERT cannot return a value).
  Confinement confine(const Path& desk, std::vector<Path> hidden) const {
    auto created = Confinement::create(desk, hidden);
    if (!created.ok()) throw std::runtime_error(created.error().what);
    return std::move(created).value();
  }
  Confinement confine_default() const { return confine(desk(), hidden_paths()); }
};

TEST_F(ConfinementTest, DeskFolderIsResolved) {
  EXPECT_EQ(confine_default().desk_directory(), desk());
}

TEST_F(ConfinementTest, DeskFolderGivenThroughALinkIsResolvedToItsTarget) {
  make_symlink(desk(), root() / "desk_link");
  EXPECT_EQ(confine(root() / "desk_link", {}).desk_directory(), desk());
  EXPECT_EQ(confine(root() / "desk_link/../desk/./", {}).desk_directory(), desk());
}

TEST_F(ConfinementTest, MissingDeskFolderIsRefused) {
  const auto created = Confinement::create(root() / "no_such_desk", {});
  EXPECT_EQ(error_code_of(created), ErrorCode::not_found);
  EXPECT_EQ(created.error().what,
            "The desk folder " + (root() / "no_such_desk").native() + " does not exist.");
}

TEST_F(ConfinementTest, EmptyDeskFolderIsRefused) {
  EXPECT_EQ(error_code_of(Confinement::create(Path(), {})), ErrorCode::invalid_argument);
}

TEST_F(ConfinementTest, DeskFolderThatIsAFileIsRefused) {
  const auto created = Confinement::create(desk() / "plan.md", {});
  EXPECT_EQ(error_code_of(created), ErrorCode::invalid_argument);
  EXPECT_EQ(created.error().what,
            "The desk folder " + (desk() / "plan.md").native() + " is not a folder.");
}

TEST_F(ConfinementTest, HiddenPathsAreKeptResolvedInTheOrderGiven) {
  EXPECT_EQ(confine_default().hidden_paths(), (std::vector<Path>{secrets(), token()}));
}

TEST_F(ConfinementTest, HiddenPathsGivenThroughALinkAreResolvedToTheirTargets) {
  // The check compares resolved paths, so a hidden path kept as its link would hide nothing.
  make_symlink(secrets(), root() / "secrets_link");
  make_symlink("token.txt", root() / "token_link");
  const auto confinement = confine(desk(), {root() / "secrets_link", root() / "token_link"});
  EXPECT_EQ(confinement.hidden_paths(), (std::vector<Path>{secrets(), token()}));
}

TEST_F(ConfinementTest, RelativeHiddenPathStartsAtTheDeskFolder) {
  const auto confinement = confine(desk(), {"../secrets", "../token.txt"});
  EXPECT_EQ(confinement.hidden_paths(), (std::vector<Path>{secrets(), token()}));
}

TEST_F(ConfinementTest, MissingHiddenPathIsKeptAsWritten) {
  // A secret created after the desk starts must still be hidden.
  const auto confinement = confine(desk(), {root() / "later/secret.txt"});
  EXPECT_EQ(confinement.hidden_paths(), (std::vector<Path>{root() / "later/secret.txt"}));
}

TEST_F(ConfinementTest, DuplicateHiddenPathsAreRemoved) {
  make_symlink(secrets(), root() / "secrets_link");
  const auto confinement = confine(
      desk(), {secrets(), token(), root() / "secrets_link", secrets().native() + "/", "../secrets", token()});
  EXPECT_EQ(confinement.hidden_paths(), (std::vector<Path>{secrets(), token()}));
}

TEST_F(ConfinementTest, HiddenPathHoldingTheDeskIsRefused) {
  for (const Path& hidden : {root(), desk(), Path("/"), Path(".")}) {
    const auto created = Confinement::create(desk(), std::vector<Path>{hidden});
    EXPECT_EQ(error_code_of(created), ErrorCode::invalid_argument) << hidden;
    if (!created.ok()) {
      EXPECT_EQ(created.error().what, "The hidden path " + hidden.native() + " holds the desk folder " +
                                          desk().native() +
                                          " itself, so the desk could read nothing of its own.");
    }
  }
}

TEST_F(ConfinementTest, HiddenPathThatIsAWritablePlaceIsRefused) {
  // The desk must keep its memory and notes; the config loader asks the same rule.
  const std::pair<const char*, const char*> given_and_place[] = {
      {"Memory.md", "Memory.md"}, {"memory", "memory"}, {"notes", "notes"}, {"scratch/", "scratch"}};
  for (const auto& [given, place] : given_and_place) {
    const auto created = Confinement::create(desk(), std::vector<Path>{given});
    EXPECT_EQ(error_code_of(created), ErrorCode::invalid_argument) << given;
    if (!created.ok()) {
      EXPECT_THAT(created.error().what, StartsWith("The hidden path " + std::string(given) + " is the writable place " +
                                                   (desk() / place).native() + ","));
    }
  }
  EXPECT_FALSE(deskd::policy::hidden_path_clash(desk(), desk() / "notes/private").has_value());
  EXPECT_EQ(deskd::policy::hidden_path_clash(desk(), root())->kind,
            deskd::policy::HiddenPathClash::Kind::holds_desk_folder);
}

TEST_F(ConfinementTest, HiddenPathInsideTheDeskIsAccepted) {
  const auto confinement = confine(desk(), {"scratch/private"});
  EXPECT_EQ(confinement.hidden_paths(), (std::vector<Path>{desk() / "scratch/private"}));
}

TEST_F(ConfinementTest, HiddenPathThatCannotBeResolvedIsRefused) {
  make_symlink("loop", root() / "loop");
  const auto created = Confinement::create(desk(), std::vector<Path>{root() / "loop"});
  EXPECT_EQ(error_code_of(created), ErrorCode::refused);
  EXPECT_THAT(created.error().what, StartsWith("The hidden path " + (root() / "loop").native() +
                                               " cannot be used: "));
  EXPECT_THAT(created.error().what, HasSubstr("loop of symbolic links"));
}

TEST_F(ConfinementTest, WritableFolderThatIsALinkIsRefused) {
  // A linked scratch/ would let every write "inside scratch/" land wherever it points.
  std::filesystem::remove(desk() / "scratch");
  std::filesystem::create_directory(root() / "outside");
  make_symlink(root() / "outside", desk() / "scratch");
  const auto created = Confinement::create(desk(), hidden_paths());
  EXPECT_EQ(error_code_of(created), ErrorCode::refused);
  EXPECT_EQ(created.error().what, "The writable place " + (desk() / "scratch").native() +
                                      " is a symbolic link; it must be a real folder so that "
                                      "writes stay inside the desk folder.");
}

TEST_F(ConfinementTest, WritableFileThatIsALinkIsRefused) {
  std::filesystem::remove(desk() / "Memory.md");
  make_symlink("plan.md", desk() / "Memory.md");
  const auto created = Confinement::create(desk(), hidden_paths());
  EXPECT_EQ(error_code_of(created), ErrorCode::refused);
  EXPECT_THAT(created.error().what, HasSubstr("is a symbolic link; it must be a real file"));
}

TEST_F(ConfinementTest, MissingWritablePlacesAreAccepted) {
  // A new desk may not have made its notes yet; they are created on first write.
  std::filesystem::remove(desk() / "Memory.md");
  std::filesystem::remove(desk() / "notes");
  EXPECT_EQ(confine_default().writable_places().size(), 4u);
}

TEST_F(ConfinementTest, WritablePlacesAreMemoryFileAndTheThreeFolders) {
  const auto confinement = confine_default();
  const auto& places = confinement.writable_places();
  ASSERT_EQ(places.size(), 4u);
  EXPECT_EQ(places[0].path, desk() / "Memory.md");
  EXPECT_EQ(places[0].kind, WritablePlace::Kind::file);
  EXPECT_EQ(places[1].path, desk() / "memory");
  EXPECT_EQ(places[2].path, desk() / "notes");
  EXPECT_EQ(places[3].path, desk() / "scratch");
  for (std::size_t index = 1; index < places.size(); ++index) {
    EXPECT_EQ(places[index].kind, WritablePlace::Kind::folder);
  }
}

TEST_F(ConfinementTest, CopiesShareTheirData) {
  const auto original = confine_default();
  const Confinement copy = original;  // NOLINT(performance-unnecessary-copy-initialization)
  EXPECT_EQ(&copy.desk_directory(), &original.desk_directory());
  EXPECT_EQ(&copy.hidden_paths(), &original.hidden_paths());
  EXPECT_EQ(&copy.writable_places(), &original.writable_places());
}

TEST_F(ConfinementTest, HidingNamesTheHiddenPathThatCoversAPath) {
  const auto confinement = confine_default();
  const Path* hidden = confinement.hiding(secrets());
  ASSERT_NE(hidden, nullptr);
  EXPECT_EQ(*hidden, secrets());
  EXPECT_EQ(confinement.hiding(secret_key()), hidden);
  EXPECT_EQ(confinement.hiding(secrets() / "sub/deeper"), hidden);
  ASSERT_NE(confinement.hiding(token()), nullptr);
  EXPECT_EQ(*confinement.hiding(token()), token());
}

TEST_F(ConfinementTest, HidingIgnoresNeighboursAndParents) {
  const auto confinement = confine_default();
  EXPECT_EQ(confinement.hiding(root() / "secrets-public"), nullptr);
  EXPECT_EQ(confinement.hiding(root() / "secrets-public/key.txt"), nullptr);
  EXPECT_EQ(confinement.hiding(root() / "token.txt.bak"), nullptr);
  EXPECT_EQ(confinement.hiding(root()), nullptr);
  EXPECT_EQ(confinement.hiding(desk() / "notes/a.md"), nullptr);
}

TEST_F(ConfinementTest, WritablePlaceForAllowsMemoryFileAndInsideTheFolders) {
  const auto confinement = confine_default();
  const auto& places = confinement.writable_places();
  EXPECT_EQ(confinement.writable_place_for(desk() / "Memory.md"), &places[0]);
  EXPECT_EQ(confinement.writable_place_for(desk() / "memory/2024.md"), &places[1]);
  EXPECT_EQ(confinement.writable_place_for(desk() / "notes/a/b/c.md"), &places[2]);
  EXPECT_EQ(confinement.writable_place_for(desk() / "scratch/x"), &places[3]);
}

TEST_F(ConfinementTest, WritablePlaceForRefusesEverythingElse) {
  const auto confinement = confine_default();
  for (const char* name : {"memory", "notes", "scratch", "Memory.md.bak", "Memory.md/x", "memoryx/a",
                           "notesx", "plan.md", "MEMORY.md"}) {
    EXPECT_EQ(confinement.writable_place_for(desk() / name), nullptr) << name;
  }
  EXPECT_EQ(confinement.writable_place_for(desk()), nullptr);
  EXPECT_EQ(confinement.writable_place_for(root() / "notes/a.md"), nullptr);
  EXPECT_EQ(confinement.writable_place_for(secret_key()), nullptr);
}

}  // namespace
