// ProposalStore: one JSON file per proposal, written atomically, stamped in India time by
// an injected clock; and the unified diff it stores.

#include "runner/tools/proposal_store.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <boost/json.hpp>
#include <string>

#include "runner/tools/unified_diff.h"
#include "unit/policy/desk_fixture.h"
#include "unit/tools/file_tools_fixture.h"

namespace {

using deskd::ErrorCode;
using deskd::ManualClock;
using deskd::policy::testing::entries_of;
using deskd::policy::testing::error_code_of;
using deskd::policy::testing::make_symlink;
using deskd::policy::testing::read_file;
using deskd::policy::testing::write_file;
using deskd::tools::india_time_iso8601;
using deskd::tools::Proposal;
using deskd::tools::ProposalStore;
using deskd::tools::testing::new_year_2024;
using ::testing::MatchesRegex;
using Path = std::filesystem::path;

class ProposalStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (std::filesystem::temp_directory_path() / "deskd-proposals-XXXXXX").native();
    ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
    root_ = std::filesystem::canonical(pattern);
    auto opened = ProposalStore::open(folder(), clock_);
    ASSERT_TRUE(opened.ok()) << opened.error().what;
    store_ = std::move(opened).value();
    write_file(root_ / "plan.md", "one\ntwo\nthree\n");
  }
  void TearDown() override { std::filesystem::remove_all(root_); }

  Path folder() const { return root_ / "desk" / ".deskd" / "proposals"; }
  Path plan() const { return root_ / "plan.md"; }
  std::string label(const Path& path) const { return path.native().substr(1); }
  static std::string text_of(const boost::json::object& object, const char* key) {
    const auto* value = object.if_contains(key);
    return value != nullptr && value->is_string() ? std::string(value->get_string()) : "(not a string)";
  }

  Path root_;
  std::shared_ptr<ManualClock> clock_ = std::make_shared<ManualClock>(new_year_2024());
  std::shared_ptr<ProposalStore> store_;
};

TEST(IndiaTime, IsUtcPlusFiveThirtyToTheSecond) {
  using namespace std::chrono;
  EXPECT_EQ(india_time_iso8601(new_year_2024()), "2024-01-01T05:30:00+05:30");
  EXPECT_EQ(india_time_iso8601(sys_days{year{2024} / 3 / 31} + 20h + 15min + 7s + 999ms), "2024-04-01T01:45:07+05:30");
  EXPECT_EQ(india_time_iso8601(sys_days{year{2024} / 2 / 28} + 18h + 30min), "2024-02-29T00:00:00+05:30");
  EXPECT_EQ(india_time_iso8601(sys_days{year{1969} / 12 / 31} + 23h), "1970-01-01T04:30:00+05:30");
}

TEST_F(ProposalStoreTest, OpenCreatesTheFolderAndRefusesRelativeOnes) {
  EXPECT_TRUE(std::filesystem::is_directory(folder()));
  EXPECT_EQ(store_->folder(), folder());
  EXPECT_EQ(error_code_of(ProposalStore::open("relative/proposals", clock_)), ErrorCode::invalid_argument);
  // A folder reached through a link is kept resolved, because SafeFile refuses links.
  make_symlink(folder(), root_ / "link");
  auto through_link = ProposalStore::open(root_ / "link", clock_);
  ASSERT_TRUE(through_link.ok());
  EXPECT_EQ((*through_link)->folder(), folder());
}

TEST_F(ProposalStoreTest, CreateWritesOneJsonFileWithEveryField) {
  clock_->set(std::chrono::sys_days{std::chrono::year{2025} / 6 / 1} + std::chrono::hours(4));
  auto created = store_->create("research", plan(), "Fix the count.", "one\n2\nthree\n");
  ASSERT_TRUE(created.ok()) << created.error().what;
  EXPECT_THAT(created->id, MatchesRegex("p-[0-9a-f]{12}"));
  EXPECT_EQ(entries_of(folder()), std::vector<std::string>{created->id + ".json"});  // no temporary left

  const auto stored = boost::json::parse(read_file(folder() / (created->id + ".json"))).as_object();
  EXPECT_EQ(stored.size(), 9u);
  // What the file was, so that accepting never overwrites a change made since.
  EXPECT_EQ(text_of(stored, "base"), *deskd::tools::file_base(plan()));
  EXPECT_EQ(text_of(stored, "base").substr(0, 7), "sha256:");
  EXPECT_EQ(text_of(stored, "id"), created->id);
  EXPECT_EQ(text_of(stored, "desk"), "research");
  EXPECT_EQ(text_of(stored, "path"), plan().native());
  EXPECT_EQ(text_of(stored, "reason"), "Fix the count.");
  EXPECT_EQ(text_of(stored, "content"), "one\n2\nthree\n");
  EXPECT_EQ(text_of(stored, "time"), "2025-06-01T09:30:00+05:30");
  EXPECT_EQ(text_of(stored, "status"), "open");
  EXPECT_EQ(text_of(stored, "diff"), "--- a/" + label(plan()) + "\n+++ b/" + label(plan()) +
                                   "\n@@ -1,3 +1,3 @@\n one\n-two\n+2\n three\n");
  EXPECT_EQ(read_file(plan()), "one\ntwo\nthree\n");  // proposing changes nothing
}

TEST_F(ProposalStoreTest, ListIsOldestFirstAndSkipsStrays) {
  ASSERT_TRUE(store_->create("a", plan(), "first", "1").ok());
  clock_->advance(std::chrono::minutes(5));
  ASSERT_TRUE(store_->create("b", plan(), "second", "2").ok());
  write_file(folder() / "notes.txt", "not a proposal");
  write_file(folder() / "p-zzzzzzzzzzzz.json", "{}");
  write_file(folder() / "p-0123456789ab.json", "{\"id\": \"p-0123456789ab\", damaged");
  write_file(folder() / ".p-0123456789ac.json.deskd-1234.tmp", "{}");
  auto proposals = store_->list();
  ASSERT_TRUE(proposals.ok()) << proposals.error().what;
  ASSERT_EQ(proposals->size(), 2u);
  EXPECT_EQ((*proposals)[0].reason, "first");
  EXPECT_EQ((*proposals)[1].reason, "second");
  EXPECT_EQ((*proposals)[1].time, "2024-01-01T05:35:00+05:30");
  EXPECT_EQ(error_code_of(store_->get("p-0123456789ab")), ErrorCode::internal);  // damaged, said so
}

TEST_F(ProposalStoreTest, GetFindsOnlyRealIds) {
  auto created = store_->create("research", plan(), "why", "new\n");
  ASSERT_TRUE(created.ok());
  auto found = store_->get(created->id);
  ASSERT_TRUE(found.ok());
  EXPECT_EQ(found->content, "new\n");
  EXPECT_EQ(found->diff, created->diff);
  for (const std::string& id : {std::string("p-000000000000"), std::string("../../plan.md"), std::string(""),
                               std::string("P-") + created->id.substr(2), created->id + ".json"}) {
    auto missing = store_->get(id);
    ASSERT_FALSE(missing.ok()) << id;
    EXPECT_EQ(missing.error().code, ErrorCode::not_found);
    EXPECT_EQ(missing.error().what, "There is no proposal " + id + ".");
  }
}

TEST_F(ProposalStoreTest, SetStatusAcceptsOrRejectsAnOpenProposalOnce) {
  auto first = store_->create("research", plan(), "why", "a");
  auto second = store_->create("research", plan(), "why", "b");
  ASSERT_TRUE(first.ok() && second.ok());
  EXPECT_TRUE(store_->set_status(first->id, "accepted").ok());
  EXPECT_TRUE(store_->set_status(second->id, "rejected").ok());
  EXPECT_EQ(store_->get(first->id)->status, "accepted");
  EXPECT_EQ(store_->get(second->id)->status, "rejected");
  EXPECT_EQ(store_->get(first->id)->content, "a");

  auto again = store_->set_status(first->id, "rejected");
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(again.error().what, "The proposal " + first->id + " is already accepted.");
  EXPECT_EQ(error_code_of(store_->set_status(first->id, "open")), ErrorCode::invalid_argument);
  EXPECT_EQ(error_code_of(store_->set_status("p-000000000000", "accepted")), ErrorCode::not_found);
  EXPECT_EQ(entries_of(folder()).size(), 2u);
}

TEST_F(ProposalStoreTest, ANewFileDiffsAgainstNothing) {
  const Path fresh = root_ / "docs" / "new.md";
  auto created = store_->create("research", fresh, "docs", "a\nb");
  ASSERT_TRUE(created.ok()) << created.error().what;
  EXPECT_EQ(created->diff, "--- a/" + label(fresh) + "\n+++ b/" + label(fresh) +
                               "\n@@ -0,0 +1,2 @@\n+a\n+b\n\\ No newline at end of file\n");
}

TEST_F(ProposalStoreTest, RefusesWhatCannotBeStored) {
  EXPECT_EQ(error_code_of(store_->create("d", plan(), "why", "caf\xe9")), ErrorCode::invalid_argument);
  EXPECT_EQ(error_code_of(store_->create("d", "plan.md", "why", "x")), ErrorCode::invalid_argument);
  EXPECT_EQ(error_code_of(store_->create("d", plan(), "why", std::string((16u << 20) + 1, 'x'))),
            ErrorCode::invalid_argument);
  EXPECT_FALSE(store_->create("d", root_, "why", "x").ok());  // a folder
  EXPECT_TRUE(entries_of(folder()).empty());
}

TEST_F(ProposalStoreTest, BinaryAndHugeCurrentFilesAreNotDiffed) {
  write_file(root_ / "image.bin", std::string("\x89PNG\xff", 5));
  auto binary = store_->create("d", root_ / "image.bin", "why", "text");
  ASSERT_TRUE(binary.ok());
  EXPECT_EQ(binary->diff, "(the current file is not text; no diff shown)");
  write_file(root_ / "big.txt", std::string((1u << 20) + 1, 'x'));
  auto big = store_->create("d", root_ / "big.txt", "why", "small");
  ASSERT_TRUE(big.ok());
  EXPECT_EQ(big->diff, "(too large to show)");
}

}  // namespace
