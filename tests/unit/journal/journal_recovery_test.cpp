// What a restart reads back from a journal: how far each open trigger got (so that one
// whose turn ended is not run again), damaged lines reported with what was saved of them,
// the highest event id, and only what an earlier process wrote.

#include <boost/json.hpp>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "runner/journal/journal.h"
#include "unit/journal/journal_fixture.h"

namespace deskd::desk {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
namespace fs = std::filesystem;
namespace json = boost::json;
using testing::JournalTest;
using Progress = OpenTrigger::Progress;
using namespace std::string_literals;

class JournalRecoveryTest : public JournalTest {
 protected:
  JournalScan scan() {
    auto read = Journal::read(path_);
    EXPECT_TRUE(read.ok()) << read.error().what;
    return std::move(read).value();
  }
  std::string line_of(const Event& event) { return json::serialize(to_json(event)); }
};

TEST_F(JournalRecoveryTest, EachOpenTriggerSaysHowFarItGot) {
  auto journal = Journal::open(path_).value();
  const Trigger waiting = trigger("waiting");
  const Trigger started = trigger("started");
  const Trigger stopped = trigger("stopped with the desk");
  const Trigger ended = trigger("its finish line was lost");
  const Trigger answered = trigger("/btw answered");
  const Trigger rolled = trigger("after a failed rollover");
  append_all(journal, {accepted(waiting), accepted(started), of(started, event_kind::kTurnStarted),
                       accepted(stopped), of(stopped, event_kind::kTurnStarted),
                       of(stopped, event_kind::kTurnStopped, {{"reason", "the desk stopped"}}),
                       accepted(ended), of(ended, event_kind::kTurnStarted),
                       of(ended, event_kind::kTurnFinished, {{"reply", "done"}}),
                       accepted(answered), of(answered, event_kind::kCommandAnswered, {{"reply", "42"}}),
                       accepted(rolled), of(rolled, event_kind::kTurnFailed, {{"rollover", true}, {"error", "no summary"}})});
  const auto open = scan().open_triggers();
  ASSERT_EQ(open.size(), 6u);
  EXPECT_EQ(open[0].progress, Progress::waiting);
  EXPECT_EQ(open[1].progress, Progress::started);
  EXPECT_THAT(open[1].progress_event, HasSubstr("TURN_STARTED"));
  EXPECT_EQ(open[2].progress, Progress::stopped);
  EXPECT_EQ(open[3].progress, Progress::ended);
  EXPECT_THAT(open[3].progress_event, HasSubstr("TURN_FINISHED"));
  EXPECT_EQ(open[4].progress, Progress::ended);
  EXPECT_EQ(open[5].progress, Progress::waiting);  // a failed rollover is not the end of the turn
  EXPECT_EQ(open[0].accepted_event.substr(0, 2), "e-");
}

TEST_F(JournalRecoveryTest, SteeringDeliveredIntoATurnThatEndedEndedWithIt) {
  auto journal = Journal::open(path_).value();
  const Trigger turn = trigger("the turn");
  const Trigger steering = trigger("also check banknifty");
  const Trigger late = trigger("steering of an interrupted turn");
  const Trigger other = trigger("the next turn");
  append_all(journal, {accepted(turn), of(turn, event_kind::kTurnStarted), accepted(steering),
                       of(steering, event_kind::kSteeringDelivered), of(turn, event_kind::kTurnFinished),
                       accepted(other), of(other, event_kind::kTurnStarted), accepted(late),
                       of(late, event_kind::kSteeringDelivered)});
  const auto open = scan().open_triggers();
  ASSERT_EQ(open.size(), 4u);
  EXPECT_EQ(open[1].progress, Progress::ended);
  EXPECT_EQ(open[2].progress, Progress::started);
  EXPECT_EQ(open[3].progress, Progress::started);
}

TEST_F(JournalRecoveryTest, ATriggerWithABadFieldButItsIdAndTextIsReadAndReported) {
  Journal::open(path_).value();
  const Trigger kept = trigger("sell 2 lots at 24,100");
  json::object event = to_json(accepted(kept));
  event["data"].as_object()["received"] = 5;  // hand-edited, or written by another version
  write_raw(json::serialize(event) + "\n");
  const JournalScan read = scan();
  const auto open = read.open_triggers();
  ASSERT_EQ(open.size(), 1u);
  EXPECT_EQ(open[0].trigger.id, kept.id);
  EXPECT_EQ(open[0].trigger.text, "sell 2 lots at 24,100");
  EXPECT_EQ(open[0].damaged_line, 1u);
  ASSERT_EQ(read.damaged().size(), 1u);
  EXPECT_THAT(read.damaged()[0].problem, HasSubstr("\"received\""));
  EXPECT_EQ(read.damaged()[0].trigger, kept.id);
  EXPECT_THAT(read.damaged()[0].recovered, HasSubstr("read whole"));
}

TEST_F(JournalRecoveryTest, ATornTriggerIsReportedWithItsTextAndTheRestIsRead) {
  Journal::open(path_).value();
  const Trigger torn = trigger("buy 3 lots of NIFTY at no more than 24,050");
  const std::string line = line_of(accepted(torn));
  // Cut inside the text: a crash during the write, so it was never acknowledged.
  write_raw(line.substr(0, line.find("24,050")) + "\n");
  const Trigger after = trigger("after");
  write_raw(line_of(accepted(after)) + "\n");
  const JournalScan read = scan();
  ASSERT_EQ(read.open_triggers().size(), 1u);
  EXPECT_EQ(read.open_triggers()[0].trigger.text, "after");
  ASSERT_EQ(read.damaged().size(), 1u);
  const DamagedLine& damaged = read.damaged()[0];
  EXPECT_EQ(damaged.line, 1u);
  EXPECT_THAT(damaged.problem, HasSubstr("ends before its event does"));
  EXPECT_EQ(damaged.kind, event_kind::kTriggerAccepted);
  EXPECT_EQ(damaged.trigger, torn.id);
  EXPECT_THAT(damaged.recovered, HasSubstr("is not run"));
  EXPECT_THAT(damaged.recovered, HasSubstr("\"buy 3 lots of NIFTY at no more than  [cut off]\""));
}

TEST_F(JournalRecoveryTest, ATornFinishLineStillFinishesItsTrigger) {
  auto journal = Journal::open(path_).value();
  const Trigger done = trigger("done");
  append_all(journal, {accepted(done)});
  const std::string finish = line_of(finished(done));
  write_raw(finish.substr(0, finish.size() - 2) + "\n");  // the id whole, the rest lost
  const JournalScan read = scan();
  EXPECT_TRUE(read.open_triggers().empty());
  ASSERT_EQ(read.damaged().size(), 1u);
  EXPECT_THAT(read.damaged()[0].recovered, HasSubstr("read as TRIGGER_FINISHED of trigger " + done.id));
}

TEST_F(JournalRecoveryTest, GarbageIsCountedAndPassedOverAndIdsAreReadPastIt) {
  auto journal = Journal::open(path_).value();
  append_all(journal, {accepted(trigger("first"))});
  write_raw("\0\0\0\0 not an event\n"s + "[1, 2]\n{\"kind\": \"TRIGGER_ACCEPTED\", \"data\": {\"id\": 5}}\n");
  const Event last = accepted(trigger("second"));
  append_all(journal, {last});
  const JournalScan read = scan();
  EXPECT_EQ(read.open_triggers().size(), 2u);
  EXPECT_EQ(read.damaged_count(), 3u);
  EXPECT_EQ(read.damaged()[0].line, 2u);
  EXPECT_EQ(read.highest_event_number(), event_sequence_number(last.id));
}

TEST_F(JournalRecoveryTest, RecoverReadsOnlyWhatAnEarlierProcessWroteAndOnlyOnce) {
  const Trigger earlier = trigger("from before the restart");
  {
    auto journal = Journal::open(path_).value();
    append_all(journal, {accepted(earlier)});
  }
  auto journal = Journal::open(path_).value();
  // Accepted by this process before its desk began to recover: queued by this process.
  append_all(journal, {accepted(trigger("from after the restart"))});
  auto recovery = journal.recover();
  ASSERT_TRUE(recovery.ok()) << recovery.error().what;
  ASSERT_EQ(recovery->open_triggers.size(), 1u);
  EXPECT_EQ(recovery->open_triggers[0].trigger.id, earlier.id);
  EXPECT_FALSE(recovery->compaction);  // small and whole: left as it is
  EXPECT_TRUE(journal.recover()->open_triggers.empty());
}

TEST_F(JournalRecoveryTest, ATriggerKeepsItsKindThroughTheJournalAndOldLinesHaveNone) {
  auto journal = Journal::open(path_).value();
  Trigger command = trigger("/pause");
  command.kind = Trigger::Kind::command;
  const Trigger old = trigger("/pause");  // written before kinds were journaled
  append_all(journal, {accepted(command), accepted(old)});
  EXPECT_THAT(lines()[0], HasSubstr("\"kind\":\"command\""));
  const auto open = scan().open_triggers();
  ASSERT_EQ(open.size(), 2u);
  EXPECT_EQ(open[0].trigger.kind, Trigger::Kind::command);
  EXPECT_FALSE(open[1].trigger.kind.has_value());
}

}  // namespace
}  // namespace deskd::desk
