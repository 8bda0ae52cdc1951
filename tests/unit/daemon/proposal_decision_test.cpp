// Deciding a proposal: accepting writes the file atomically only when it is still what the
// proposal was made against and the path is not hidden; rejecting leaves the file alone.

#include "runner/daemon/proposal_decision.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "unit/policy/desk_fixture.h"
#include "unit/tools/file_tools_fixture.h"

namespace {

using deskd::ErrorCode;
using deskd::ManualClock;
using deskd::policy::PathPolicy;
using deskd::policy::testing::read_file;
using deskd::policy::testing::write_file;
using deskd::tools::accept_proposal;
using deskd::tools::file_base;
using deskd::tools::ProposalStore;
using deskd::tools::reject_proposal;
using deskd::tools::testing::new_year_2024;
using Path = std::filesystem::path;

class ProposalDecisionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = "/var/tmp/deskd-decisions-XXXXXX";
    ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
    root_ = std::filesystem::canonical(pattern);
    std::filesystem::create_directories(desk());
    std::filesystem::create_directories(root_ / "secrets");
    write_file(desk() / "plan.md", "lots: 4\n");
    write_file(root_ / "secrets" / "key", "secret\n");
    ::chmod((desk() / "plan.md").c_str(), 0640);
    auto opened = ProposalStore::open(root_ / "state" / "proposals", clock_);
    ASSERT_TRUE(opened.ok()) << opened.error().what;
    store_ = std::move(opened).value();
    const Path hidden[] = {root_ / "secrets"};
    auto policy = PathPolicy::create(desk(), hidden);
    ASSERT_TRUE(policy.ok()) << policy.error().what;
    policy_.emplace(std::move(policy).value());
  }
  void TearDown() override { std::filesystem::remove_all(root_); }

  Path desk() const { return root_ / "desk"; }
  std::string propose(const Path& path, std::string content) {
    auto proposal = store_->create("nifty", path, "because", content);
    EXPECT_TRUE(proposal.ok()) << proposal.error().what;
    return proposal.ok() ? proposal->id : "";
  }

  Path root_;
  std::shared_ptr<ManualClock> clock_ = std::make_shared<ManualClock>(new_year_2024());
  std::shared_ptr<ProposalStore> store_;
  std::optional<PathPolicy> policy_;
};

TEST_F(ProposalDecisionTest, AcceptingWritesTheContentKeepsTheModeAndMarksItAccepted) {
  const std::string id = propose(desk() / "plan.md", "lots: 2\n");
  auto accepted = accept_proposal(*store_, *policy_, id);
  ASSERT_TRUE(accepted.ok()) << accepted.error().what;
  EXPECT_EQ(accepted->status, "accepted");
  EXPECT_EQ(read_file(desk() / "plan.md"), "lots: 2\n");
  struct stat status {};
  ASSERT_EQ(::stat((desk() / "plan.md").c_str(), &status), 0);
  EXPECT_EQ(status.st_mode & 0777, 0640u);
  EXPECT_EQ(store_->get(id)->status, "accepted");
  // No temporary file is left beside it.
  std::size_t entries = 0;
  for ([[maybe_unused]] const auto& entry : std::filesystem::directory_iterator(desk())) ++entries;
  EXPECT_EQ(entries, 1u);

  auto again = accept_proposal(*store_, *policy_, id);
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(again.error().what, "Proposal " + id + " is already accepted.");
}

TEST_F(ProposalDecisionTest, AProposalForANewFileCreatesIt) {
  const std::string id = propose(desk() / "rules.md", "new\n");
  auto accepted = accept_proposal(*store_, *policy_, id);
  ASSERT_TRUE(accepted.ok()) << accepted.error().what;
  EXPECT_EQ(read_file(desk() / "rules.md"), "new\n");
}

TEST_F(ProposalDecisionTest, AFileChangedSinceTheProposalIsNeverOverwritten) {
  const std::string id = propose(desk() / "plan.md", "lots: 2\n");
  write_file(desk() / "plan.md", "lots: 3 (edited by hand)\n");
  auto refused = accept_proposal(*store_, *policy_, id);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().code, ErrorCode::refused);
  EXPECT_NE(refused.error().what.find("changed after the proposal was made"), std::string::npos) << refused.error().what;
  EXPECT_EQ(read_file(desk() / "plan.md"), "lots: 3 (edited by hand)\n");
  EXPECT_EQ(store_->get(id)->status, "open");

  const std::string created = propose(desk() / "later.md", "x\n");
  write_file(desk() / "later.md", "someone else made it\n");
  EXPECT_FALSE(accept_proposal(*store_, *policy_, created).ok());
  EXPECT_EQ(read_file(desk() / "later.md"), "someone else made it\n");
}

TEST_F(ProposalDecisionTest, AHiddenPathIsNeverWritten) {
  // A proposal file a desk could not have made through its tools, as if forged.
  const std::string id = propose(root_ / "secrets" / "key", "stolen\n");
  auto refused = accept_proposal(*store_, *policy_, id);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().code, ErrorCode::refused);
  EXPECT_NE(refused.error().what.find("holds secrets"), std::string::npos) << refused.error().what;
  EXPECT_EQ(read_file(root_ / "secrets" / "key"), "secret\n");
}

TEST_F(ProposalDecisionTest, AForgedProposalOutsideTheDeskFolderIsNeverWritten) {
  // Stored by an older deskd, or written into the store by hand: accept checks the place too.
  const std::string id = propose(root_ / "profile.sh", "id\n");
  auto refused = accept_proposal(*store_, *policy_, id);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().code, ErrorCode::refused);
  EXPECT_NE(refused.error().what.find("is outside your desk folder"), std::string::npos) << refused.error().what;
  EXPECT_FALSE(std::filesystem::exists(root_ / "profile.sh"));
  EXPECT_EQ(store_->get(id)->status, "open");
}

TEST_F(ProposalDecisionTest, AFifoIsRefusedWithoutBeingOpened) {
  ASSERT_EQ(::mkfifo((desk() / "pipe").c_str(), 0600), 0);
  auto base = file_base(desk() / "pipe");
  ASSERT_FALSE(base.ok());
  EXPECT_NE(base.error().what.find("is not a regular file"), std::string::npos) << base.error().what;
}

TEST_F(ProposalDecisionTest, RejectingLeavesTheFileAlone) {
  const std::string id = propose(desk() / "plan.md", "lots: 99\n");
  auto rejected = reject_proposal(*store_, id);
  ASSERT_TRUE(rejected.ok()) << rejected.error().what;
  EXPECT_EQ(rejected->status, "rejected");
  EXPECT_EQ(read_file(desk() / "plan.md"), "lots: 4\n");
  EXPECT_FALSE(accept_proposal(*store_, *policy_, id).ok());
  EXPECT_EQ(reject_proposal(*store_, "p-000000000000").error().code, ErrorCode::not_found);
}

TEST_F(ProposalDecisionTest, TheBaseIsTheFilesSha256) {
  write_file(root_ / "abc", "abc");
  EXPECT_EQ(*file_base(root_ / "abc"), "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(*file_base(root_ / "missing"), "absent");
}

}  // namespace
