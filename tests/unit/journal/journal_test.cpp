// Journal: events appended as JSON lines, and the triggers a restart must re-deliver.
// (Damaged lines, full disks and compaction: journal_recovery_test, journal_compaction_test.)

#include "runner/journal/journal.h"

#include <stdlib.h>

#include <boost/json.hpp>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <mutex>
#include <thread>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "runner/events/event_bus.h"
#include "unit/journal/journal_fixture.h"

namespace deskd::desk {
namespace {

namespace fs = std::filesystem;
namespace json = boost::json;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

using testing::JournalTest;

TEST_F(JournalTest, CreatesMissingFoldersAndWritesOneEventALine) {
  auto journal = Journal::open(path_);
  ASSERT_TRUE(journal.ok()) << journal.error().what;
  EXPECT_EQ(journal->path(), path_);
  const Event started = bus_.publish("alpha", event_kind::kDeskStarted);
  const Event text = bus_.publish("alpha", event_kind::kModelText, {{"text", "line one\nline two"}});
  append_all(*journal, {started, text});
  const auto written = lines();
  ASSERT_EQ(written.size(), 2u);
  EXPECT_EQ(written[0], json::serialize(to_json(started)));
  EXPECT_EQ(json::parse(written[1]).at("data").at("text").as_string(), "line one\nline two");
  EXPECT_EQ(fs::status(path_).permissions() & fs::perms::all, fs::perms::owner_read | fs::perms::owner_write);
}

TEST_F(JournalTest, UnfinishedTriggersRoundTripInTheOrderAccepted) {
  auto journal = Journal::open(path_).value();
  Trigger first = trigger("first");
  first.queued_explicitly = true;
  Trigger second = trigger("second");
  second.source = Trigger::Source::schedule;
  second.schedule = "morning";
  const Trigger third = trigger("third");
  // Accepted lines are fsync'ed before append returns; each of these takes that path.
  append_all(journal, {accepted(first), accepted(second), bus_.publish("alpha", event_kind::kTurnStarted),
                       accepted(third)});
  const auto triggers = unfinished();
  ASSERT_EQ(triggers.size(), 3u);
  const Trigger* expected[] = {&first, &second, &third};
  for (std::size_t index = 0; index < 3; ++index) {
    EXPECT_EQ(to_json(triggers[index]), to_json(*expected[index]));
  }
}

TEST_F(JournalTest, FinishedTriggersAreLeftOut) {
  auto journal = Journal::open(path_).value();
  const Trigger first = trigger("first");
  const Trigger second = trigger("second");
  const Trigger third = trigger("third");
  append_all(journal, {accepted(first), accepted(second), finished(first), accepted(third), finished(third)});
  EXPECT_THAT(unfinished_texts(), ElementsAre("second"));
  append_all(journal, {finished(second)});
  EXPECT_THAT(unfinished_texts(), ElementsAre());
}

TEST_F(JournalTest, ATriggerAcceptedAgainKeepsItsPlaceAndItsLatestForm) {
  auto journal = Journal::open(path_).value();
  Trigger first = trigger("first");
  const Trigger second = trigger("second");
  append_all(journal, {accepted(first), accepted(second)});
  first.redelivered = true;
  append_all(journal, {accepted(first)});
  const auto triggers = unfinished();
  ASSERT_EQ(triggers.size(), 2u);
  EXPECT_EQ(triggers[0].text, "first");
  EXPECT_TRUE(triggers[0].redelivered);
  EXPECT_EQ(triggers[1].text, "second");
}

TEST_F(JournalTest, TornAndGarbageLinesAreSkippedAndCounted) {
  {
    auto journal = Journal::open(path_).value();
    append_all(journal, {accepted(trigger("kept"))});
  }
  write_raw("not json at all\n[1, 2]\n\n{\"kind\": \"TRIGGER_ACCEPTED\", \"data\": {\"id\": 5}}\n");
  write_raw("{\"kind\": \"TRIGGER_FINISHED\", \"data\": {}}\n{\"data\": {}}\n");
  const std::string torn = json::serialize(to_json(accepted(trigger("torn"))));
  write_raw(torn.substr(0, torn.size() / 2));
  std::size_t skipped = 99;
  EXPECT_THAT(unfinished_texts(&skipped), ElementsAre("kept"));
  EXPECT_EQ(skipped, 6u);  // the blank line is not counted
}

TEST_F(JournalTest, ALastLineMissingOnlyItsNewlineStillCounts) {
  Journal::open(path_).value();
  write_raw(json::serialize(to_json(accepted(trigger("whole")))));
  std::size_t skipped = 99;
  EXPECT_THAT(unfinished_texts(&skipped), ElementsAre("whole"));
  EXPECT_EQ(skipped, 0u);
}

TEST_F(JournalTest, ReopeningAppendsAndStartsAfterATornLine) {
  {
    auto journal = Journal::open(path_).value();
    append_all(journal, {accepted(trigger("before"))});
  }
  const std::string torn = json::serialize(to_json(accepted(trigger("torn"))));
  write_raw(torn.substr(0, 40));
  {
    auto journal = Journal::open(path_).value();
    append_all(journal, {accepted(trigger("after"))});
  }
  auto journal = Journal::open(path_).value();
  append_all(journal, {accepted(trigger("later"))});
  std::size_t skipped = 0;
  // Without a newline before it, "after" would have been glued to the torn line and lost.
  EXPECT_THAT(unfinished_texts(&skipped), ElementsAre("before", "after", "later"));
  EXPECT_EQ(skipped, 1u);
  EXPECT_EQ(lines().size(), 4u);
}

TEST_F(JournalTest, LinesFromManyThreadsNeverInterleave) {
  auto journal = Journal::open(path_).value();
  std::vector<std::thread> writers;
  const std::string long_text(5000, 'x');
  for (int thread = 0; thread < 4; ++thread) {
    writers.emplace_back([&] {
      for (int index = 0; index < 200; ++index) {
        EXPECT_TRUE(journal.append(bus_.publish("alpha", event_kind::kModelText, {{"text", long_text}})).ok());
      }
    });
  }
  for (std::thread& writer : writers) writer.join();
  const auto written = lines();
  ASSERT_EQ(written.size(), 800u);
  for (const std::string& line : written) {
    EXPECT_EQ(json::parse(line).at("data").at("text").as_string(), long_text);
  }
}

// Group commit: triggers from many threads share fsyncs, and each is told only once its line
// was written before a flush that succeeded; the callbacks come in the order written.
TEST_F(JournalTest, FlushedAppendsFromManyThreadsAreEachToldOnceTheirLineIsOnDisk) {
  auto journal = Journal::open(path_).value();
  std::mutex mutex;
  std::vector<std::string> told;
  std::vector<std::thread> senders;
  for (int thread = 0; thread < 4; ++thread) {
    senders.emplace_back([&, thread] {
      for (int index = 0; index < 50; ++index) {
        const Trigger sent = trigger("t" + std::to_string(thread) + "." + std::to_string(index));
        journal.append_flushed(accepted(sent), [&, text = sent.text](Result<void> flushed) {
          EXPECT_TRUE(flushed.ok());
          const std::lock_guard lock(mutex);
          told.push_back(text);
        });
      }
    });
  }
  for (std::thread& sender : senders) sender.join();
  const std::vector<std::string> written = [&] {
    // Until the last callback has run, a line may be written but not yet told.
    for (int wait = 0; wait < 5000; ++wait) {
      {
        const std::lock_guard lock(mutex);
        if (told.size() == 200u) break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    return unfinished_texts();
  }();
  const std::lock_guard lock(mutex);
  ASSERT_EQ(told.size(), 200u);
  EXPECT_EQ(told, written) << "told in the order the lines were written";
}

TEST_F(JournalTest, AJournalGoingAwayStillFlushesAndTellsWhatWaits) {
  int told = 0;
  {
    auto journal = Journal::open(path_).value();
    for (int index = 0; index < 20; ++index) {
      journal.append_flushed(accepted(trigger("last words " + std::to_string(index))),
                             [&told](Result<void> flushed) { told += flushed.ok() ? 1 : 0; });
    }
  }
  EXPECT_EQ(told, 20);
  EXPECT_EQ(unfinished_texts().size(), 20u);
}

TEST_F(JournalTest, AMissingJournalHasNothingUnfinished) {
  const auto scan = Journal::read(root_ / "nowhere.jsonl");
  ASSERT_TRUE(scan.ok());
  EXPECT_TRUE(scan->open_triggers().empty());
  EXPECT_EQ(scan->damaged_count(), 0u);
}

TEST_F(JournalTest, RefusesWhatCannotBeAJournal) {
  fs::create_directories(path_);
  const auto directory = Journal::open(path_);
  ASSERT_FALSE(directory.ok());
  EXPECT_THAT(directory.error().what, HasSubstr(path_.string()));
  EXPECT_FALSE(Journal::read(path_).ok());
  EXPECT_FALSE(Journal::open("").ok());

  std::ofstream(root_ / "file") << "x";
  const auto under_a_file = Journal::open(root_ / "file" / "journal.jsonl");
  ASSERT_FALSE(under_a_file.ok());
  EXPECT_THAT(under_a_file.error().what, HasSubstr("could not be created"));
}

}  // namespace
}  // namespace deskd::desk
