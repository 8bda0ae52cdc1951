// A journal that stays small and survives a full disk: compaction keeps what a restart
// needs (atomically, the previous journal kept beside it, lines appended meanwhile kept),
// and a line the disk refuses is held and written once it can be — real failures, from a
// file size limit (RLIMIT_FSIZE), not mocks.

#include <boost/json.hpp>
#include <atomic>
#include <set>
#include <thread>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "runner/journal/journal.h"
#include "unit/journal/file_size_limit.h"
#include "unit/journal/journal_fixture.h"

namespace deskd::desk {
namespace {

using ::testing::HasSubstr;
namespace fs = std::filesystem;
namespace json = boost::json;
using testing::FileSizeLimit;
using testing::JournalTest;

class JournalCompactionTest : public JournalTest {
 protected:
  // Small limits, so that the tests write little.
  Journal::Limits limits_{.compact_past_bytes = 64 * 1024, .kept_tail = {.events = 10, .bytes = 1024 * 1024},
                          .maximum_held_bytes = 4 * 1024 * 1024};
  // Many finished triggers with a little text each.
  void fill(Journal& journal, int triggers) {
    for (int index = 0; index < triggers; ++index) {
      const Trigger each = trigger("finished " + std::to_string(index));
      append_all(journal, {accepted(each), of(each, event_kind::kTurnStarted),
                           of(each, event_kind::kTurnFinished, {{"reply", std::string(2000, 'r')}}), finished(each)});
    }
  }
};

TEST_F(JournalCompactionTest, ARecoveredJournalPastItsLimitKeepsOnlyWhatARestartNeeds) {
  const Trigger open = trigger("still open");
  Event last;
  {
    auto journal = Journal::open(path_, limits_).value();
    append_all(journal, {accepted(open), of(open, event_kind::kTurnStarted)});
    fill(journal, 50);
    last = bus_.publish("alpha", event_kind::kDeskStopped);
    append_all(journal, {last});
  }
  const auto before = fs::file_size(path_);
  auto journal = Journal::open(path_, limits_).value();
  auto recovery = journal.recover();
  ASSERT_TRUE(recovery.ok()) << recovery.error().what;
  ASSERT_TRUE(recovery->compaction) << (recovery->compaction_error ? recovery->compaction_error->what : "");
  EXPECT_EQ(recovery->compaction->bytes_before, before);
  EXPECT_EQ(recovery->compaction->bytes_after, fs::file_size(path_));
  EXPECT_LT(fs::file_size(path_), 10 * 1024u);
  // The journal as it was is kept beside the new one.
  EXPECT_EQ(recovery->compaction->previous, fs::path(path_.string() + ".1"));
  EXPECT_EQ(fs::file_size(recovery->compaction->previous), before);
  EXPECT_EQ(fs::status(path_).permissions() & fs::perms::all, fs::perms::owner_read | fs::perms::owner_write);
  // The open trigger, how far it got, and the newest id are all still there.
  const JournalScan again = Journal::read(path_).value();
  ASSERT_EQ(again.open_triggers().size(), 1u);
  EXPECT_EQ(again.open_triggers()[0].trigger.id, open.id);
  EXPECT_EQ(again.open_triggers()[0].progress, OpenTrigger::Progress::started);
  EXPECT_EQ(again.highest_event_number(), event_sequence_number(last.id));
  EXPECT_EQ(lines().size(), 12u);  // its 2 lines and the last 10 events
  // It goes on taking lines where it was.
  append_all(journal, {finished(open)});
  EXPECT_TRUE(Journal::read(path_)->open_triggers().empty());
}

TEST_F(JournalCompactionTest, ACompactionKeepsTheLastPauseSwitchHoweverOld) {
  const Trigger pause = trigger("/pause");
  {
    auto journal = Journal::open(path_, limits_).value();
    append_all(journal, {accepted(pause), of(pause, event_kind::kDeskPaused), finished(pause)});
    fill(journal, 50);  // far more than the kept tail of 10 events
  }
  auto journal = Journal::open(path_, limits_).value();
  auto recovery = journal.recover();
  ASSERT_TRUE(recovery.ok()) << recovery.error().what;
  ASSERT_TRUE(recovery->compaction);
  ASSERT_TRUE(recovery->pause_switch);
  EXPECT_TRUE(recovery->pause_switch->paused);
  const JournalScan again = Journal::read(path_).value();
  ASSERT_TRUE(again.pause_switch());
  EXPECT_TRUE(again.pause_switch()->paused);
  EXPECT_TRUE(again.open_triggers().empty());  // the /pause is not run again
  EXPECT_EQ(lines().size(), 11u);  // the switch and the last 10 events
}

TEST_F(JournalCompactionTest, DamagedLinesAreReportedOnceAndTheirTriggerKeptWhole) {
  const Trigger damaged = trigger("read back from a damaged line");
  {
    auto journal = Journal::open(path_, limits_).value();
    json::object event = to_json(accepted(damaged));
    event["data"].as_object().erase("sender");
    write_raw(json::serialize(event) + "\nnot json\n");
  }
  auto journal = Journal::open(path_, limits_).value();
  auto recovery = journal.recover().value();
  EXPECT_EQ(recovery.damaged_count, 2u);
  ASSERT_TRUE(recovery.compaction);
  ASSERT_EQ(recovery.open_triggers.size(), 1u);
  // Rewritten without the damage: the next start has nothing to report, and the same trigger.
  auto next = Journal::open(path_, limits_).value().recover().value();
  EXPECT_EQ(next.damaged_count, 0u);
  ASSERT_EQ(next.open_triggers.size(), 1u);
  EXPECT_EQ(next.open_triggers[0].trigger.text, damaged.text);
}

TEST_F(JournalCompactionTest, LinesAppendedDuringACompactionAreAllKept) {
  auto journal = Journal::open(path_, limits_).value();
  ASSERT_TRUE(journal.recover().ok());
  const Trigger open = trigger("a long turn");
  append_all(journal, {accepted(open)});
  fill(journal, 20);
  std::vector<std::thread> writers;
  std::vector<std::string> ids[2];
  std::atomic<int> writing{2};
  for (int writer = 0; writer < 2; ++writer) {
    writers.emplace_back([&, writer] {
      for (int index = 0; index < 400; ++index) {
        // Lines of the open trigger: a compaction must keep every one of them.
        const Event event = of(open, event_kind::kModelText, {{"text", std::string(300, 'x')}});
        ids[writer].push_back(event.id);
        EXPECT_TRUE(journal.append(event).ok());
      }
      --writing;
    });
  }
  int compactions = 0;
  do {
    compactions += journal.compact().ok() ? 1 : 0;
  } while (writing > 0);
  for (auto& writer : writers) writer.join();
  EXPECT_GE(compactions, 1);
  std::multiset<std::string> written;
  for (const std::string& line : lines()) {
    boost::system::error_code error;
    const json::value value = json::parse(line, error);
    ASSERT_FALSE(error) << line;
    written.insert(std::string(value.at("id").as_string()));
  }
  for (const auto& each : ids) {
    for (const std::string& id : each) EXPECT_EQ(written.count(id), 1u) << id;
  }
}

TEST_F(JournalCompactionTest, ALineTheDiskRefusesIsHeldAndWrittenWhenItCanBe) {
  auto journal = Journal::open(path_, limits_).value();
  const Trigger done = trigger("its finish meets a full disk");
  append_all(journal, {accepted(done)});
  const Trigger refused = trigger("sent while the disk is full");
  {
    FileSizeLimit full(fs::file_size(path_));
    const auto turn_end = journal.append(of(done, event_kind::kTurnFinished, {{"reply", "ok"}}));
    ASSERT_FALSE(turn_end.ok());
    EXPECT_THAT(turn_end.error().what, HasSubstr("could not be written"));
    EXPECT_THAT(turn_end.error().what, HasSubstr("held"));
    // A trigger that cannot be journaled is refused, never acknowledged.
    EXPECT_FALSE(journal.append(accepted(refused)).ok());
    EXPECT_FALSE(journal.append(finished(done)).ok());
    EXPECT_EQ(journal.held_lines(), 2u);
  }
  ASSERT_TRUE(journal.append(bus_.publish("alpha", event_kind::kDeskStopped)).ok());
  EXPECT_EQ(journal.held_lines(), 0u);
  const auto written = lines();
  ASSERT_EQ(written.size(), 4u);
  EXPECT_THAT(written[1], HasSubstr("TURN_FINISHED"));
  EXPECT_THAT(written[2], HasSubstr("TRIGGER_FINISHED"));
  EXPECT_THAT(written[3], HasSubstr("DESK_STOPPED"));
  EXPECT_TRUE(Journal::read(path_)->open_triggers().empty());
}

TEST_F(JournalCompactionTest, ACompactionTheDiskRefusesLeavesTheJournalAsItWas) {
  {
    auto journal = Journal::open(path_, limits_).value();
    append_all(journal, {accepted(trigger("open"))});
    fill(journal, 50);
  }
  const auto before = fs::file_size(path_);
  auto journal = Journal::open(path_, limits_).value();
  Journal::Recovery recovery;
  {
    FileSizeLimit full(1024);  // the rewrite cannot even hold the kept lines
    recovery = journal.recover().value();
  }
  EXPECT_FALSE(recovery.compaction);
  ASSERT_TRUE(recovery.compaction_error);
  EXPECT_THAT(recovery.compaction_error->what, HasSubstr("left as it was"));
  EXPECT_EQ(fs::file_size(path_), before);
  EXPECT_FALSE(fs::exists(path_.string() + ".compacting"));
  EXPECT_EQ(recovery.open_triggers.size(), 1u);
  // Not tried again at the very next line.
  append_all(journal, {bus_.publish("alpha", event_kind::kDeskStarted)});
  EXPECT_FALSE(journal.wants_compaction());
}

TEST_F(JournalCompactionTest, AJournalGrownPastItsLimitWantsACompactionOnlyOnceRecovered) {
  auto journal = Journal::open(path_, limits_).value();
  fill(journal, 50);
  EXPECT_FALSE(journal.wants_compaction());
  EXPECT_FALSE(journal.compact().ok());
  ASSERT_TRUE(journal.recover().ok());
  fill(journal, 50);
  EXPECT_TRUE(journal.wants_compaction());
  ASSERT_TRUE(journal.compact().ok());
  EXPECT_FALSE(journal.wants_compaction());
}

}  // namespace
}  // namespace deskd::desk
