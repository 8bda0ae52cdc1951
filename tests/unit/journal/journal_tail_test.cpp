// The last events of the desks' journals, read from their ends: the highest id a restarted
// daemon numbers on from, and the recent history it shows again.

#include "runner/journal/journal_tail.h"

#include <stdlib.h>

#include <boost/json.hpp>
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "runner/events/event_bus.h"
#include "runner/journal/journal.h"

namespace deskd::desk {
namespace {

namespace fs = std::filesystem;

class JournalTailTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/deskd-journal-tail-XXXXXX";
    ASSERT_NE(::mkdtemp(pattern), nullptr);
    root_ = pattern;
  }
  void TearDown() override { fs::remove_all(root_); }
  void write_raw(const fs::path& path, const std::string& text) { std::ofstream(path, std::ios::app | std::ios::binary) << text; }

  fs::path root_;
  ManualClock clock_{std::chrono::sys_days{std::chrono::November / 30 / 2026}};
  EventBus bus_{clock_};
};

TEST_F(JournalTailTest, TheNewestEventsOfAllJournalsInTheOrderOfTheirIds) {
  auto alpha = Journal::open(root_ / "desks/alpha/journal.jsonl").value();
  auto beta = Journal::open(root_ / "desks/beta/journal.jsonl").value();
  std::vector<std::string> ids;
  for (int index = 0; index < 30; ++index) {
    const Event event = bus_.publish(index % 3 == 0 ? "beta" : "alpha", event_kind::kModelText,
                                     {{"text", std::string(static_cast<std::size_t>(index) * 5000, 'x')}});
    ids.push_back(event.id);
    ASSERT_TRUE((index % 3 == 0 ? beta : alpha).append(event).ok());
  }
  // A torn last line is passed over; the line before it still counts.
  write_raw(root_ / "desks/alpha/journal.jsonl", "{\"id\":\"e-999\",\"kind\":\"MODEL_TEXT\",\"da");
  const auto journals = journals_under(root_ / "desks");
  ASSERT_EQ(journals.size(), 2u);
  const PastEvents past = read_recent_events(journals, 12);
  EXPECT_EQ(past.highest_event_number, event_sequence_number(ids.back()));
  ASSERT_EQ(past.events.size(), 12u);
  for (std::size_t index = 0; index < 12; ++index) EXPECT_EQ(past.events[index].id, ids[18 + index]);
  EXPECT_EQ(past.events.back().data.at("text").as_string().size(), 29u * 5000);
}

TEST_F(JournalTailTest, NoJournalsNoEvents) {
  const PastEvents past = read_recent_events(journals_under(root_ / "nowhere"), 100);
  EXPECT_EQ(past.highest_event_number, 0u);
  EXPECT_TRUE(past.events.empty());
}

TEST_F(JournalTailTest, TheBusNumbersOnFromTheHighestId) {
  bus_.continue_numbering_after(41);
  EXPECT_EQ(bus_.publish("alpha", event_kind::kDeskStarted).id, "e-42");
  bus_.continue_numbering_after(7);  // never backwards
  EXPECT_EQ(bus_.publish("alpha", event_kind::kDeskStarted).id, "e-43");
}

}  // namespace
}  // namespace deskd::desk
