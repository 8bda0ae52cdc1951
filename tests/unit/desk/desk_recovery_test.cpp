// A desk starting again on the journal an earlier deskd left: a re-delivered trigger is
// handled as what it was (a /pause pauses, a /btw is answered beside), each says why it
// runs again, a trigger whose turn ended is not run twice, damaged lines are reported and
// the rest recovered, a finish line the disk refused is visible at once and after the
// restart, and the journal is compacted while the desk runs.

#include <boost/asio.hpp>
#include <boost/json.hpp>
#include <filesystem>
#include <fstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "runner/desk/desk_runtime.h"
#include "runner/journal/journal.h"
#include "unit/desk/desk_runtime_fixture.h"
#include "unit/journal/file_size_limit.h"

namespace deskd::desk {
namespace {

namespace asio = boost::asio;
namespace json = boost::json;
using ::testing::HasSubstr;
using ::testing::Not;
using testing::DeskRuntimeTest;
using testing::FakeTurnRunner;
using testing::FileSizeLimit;

class DeskRecoveryTest : public DeskRuntimeTest {
 protected:
  std::filesystem::path journal_path() const { return state_ / "journal.jsonl"; }

  // Writes events to the journal as an earlier deskd would have, on a bus of its own.
  Trigger earlier(std::string text, std::optional<Trigger::Kind> kind = std::nullopt) {
    Trigger trigger = message(std::move(text));
    trigger.kind = kind;
    write(event_kind::kTriggerAccepted, to_json(trigger));
    return trigger;
  }
  void write(const char* kind, json::object data) {
    auto journal = Journal::open(journal_path());
    ASSERT_TRUE(journal.ok());
    ASSERT_TRUE(journal->append(earlier_bus_.publish("nifty", kind, std::move(data))).ok());
  }
  void start_on_journal(Journal::Limits limits = {}) {
    journal_.emplace(Journal::open(journal_path(), limits).value());
    DeskParts parts;
    parts.journal = &*journal_;
    start_desk(parts);
  }
  void restart_on_journal() {
    stop_desk();
    desk_.reset();
    journal_.reset();
    runner_ = std::make_shared<FakeTurnRunner>(context_);
    run_ended_ = false;
    events_.clear();
    start_on_journal();
  }
  void TearDown() override {
    stop_desk();  // before the journal it writes to goes
    desk_.reset();
    journal_.reset();
    DeskRuntimeTest::TearDown();
  }

  EventBus earlier_bus_{clock_};
  std::optional<Journal> journal_;
};

TEST_F(DeskRecoveryTest, AQueuedPauseIsACommandAgainAfterARestart) {
  earlier("/pause", Trigger::Kind::command);
  earlier("/btw what is the lot size?", Trigger::Kind::command);
  earlier("what now?", Trigger::Kind::message);
  start_on_journal();
  // The /pause is answered once its DESK_PAUSED is on disk, so the /btw's answer may come
  // first: each is looked up by its command.
  wait_for("COMMAND_ANSWERED", 1);
  const auto answer_to = [&](const char* command) {
    for (const Event& event : events_) {
      if (event.kind == "COMMAND_ANSWERED" && event.data.at("command") == command) return reply_of(event);
    }
    return std::string("no answer to ") + command;
  };
  EXPECT_THAT(answer_to("/pause"), HasSubstr("Paused:"));
  EXPECT_EQ(answer_to("/btw"), "side answer: what is the lot size?");
  EXPECT_THAT(reply_of(wait_for("TURN_FINISHED")), HasSubstr("paused"));
  EXPECT_TRUE(desk_->paused());
  EXPECT_EQ(runner_->turns_started, 0);  // no model ever read "/pause" as text
  EXPECT_EQ(count("TRIGGER_REDELIVERED"), 3u);
  EXPECT_EQ(find("TRIGGER_REDELIVERED")->data.at("as"), "command");
}

TEST_F(DeskRecoveryTest, AnAnsweredPauseHoldsAcrossARestartUntilResumed) {
  start_on_journal();
  ASSERT_TRUE(desk_->submit(message("/pause")).ok());
  wait_for("COMMAND_ANSWERED");
  // The switch was on disk before the answer.
  ASSERT_TRUE(Journal::read(journal_path())->pause_switch());
  restart_on_journal();
  run_until([&] { return desk_->state() == DeskState::idle; });
  EXPECT_TRUE(desk_->paused());
  ASSERT_TRUE(desk_->submit(message("anything?")).ok());
  EXPECT_THAT(reply_of(wait_for("TURN_FINISHED")), HasSubstr("paused"));
  EXPECT_EQ(runner_->turns_started, 0);

  ASSERT_TRUE(desk_->submit(message("/resume")).ok());
  wait_for("COMMAND_ANSWERED");
  restart_on_journal();
  run_until([&] { return desk_->state() == DeskState::idle; });
  EXPECT_FALSE(desk_->paused());
  ASSERT_TRUE(desk_->submit(message("now work")).ok());
  EXPECT_EQ(reply_of(wait_for("TURN_FINISHED")), "reply to now work");
}

TEST_F(DeskRecoveryTest, AResumeSentWhileTheJournalIsReadOutranksAnOlderPause) {
  const Trigger pause = earlier("/pause", Trigger::Kind::command);
  write(event_kind::kDeskPaused, {{"trigger", pause.id}});
  write(event_kind::kTriggerFinished, {{"trigger", pause.id}});
  const Trigger open_pause = earlier("/pause", Trigger::Kind::command);  // accepted, never handled
  journal_.emplace(Journal::open(journal_path()).value());
  DeskParts parts;
  parts.journal = &*journal_;
  desk_ = std::make_unique<DeskRuntime>(context_.get_executor(), DeskSettings{.name = "nifty"}, bus_, runner_, clock_, parts);
  // Handled as it arrives, before run() has read the journal.
  ASSERT_TRUE(desk_->submit(message("/resume")).ok());
  asio::co_spawn(context_, desk_->run(), asio::bind_cancellation_slot(stop_.slot(), [this](std::exception_ptr) { run_ended_ = true; }));
  run_until([&] { return desk_->state() == DeskState::idle && count("COMMAND_ANSWERED") == 2; });
  EXPECT_FALSE(desk_->paused());
  for (const Event& event : events_) {
    if (event.kind == "COMMAND_ANSWERED" && event.data.at("trigger").as_string() == open_pause.id) {
      EXPECT_THAT(reply_of(event), HasSubstr("Not applied"));
    }
  }
}

TEST_F(DeskRecoveryTest, ATriggerIsJournaledWithItsKind) {
  start_on_journal();
  ASSERT_TRUE(desk_->submit(message("/status")).ok());
  ASSERT_TRUE(desk_->submit(message("hello")).ok());
  wait_for("TURN_FINISHED");
  const JournalScan scan = Journal::read(journal_path()).value();
  std::ifstream file(journal_path());
  std::string text((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  EXPECT_THAT(text, HasSubstr("\"text\":\"/status\",\"sender\":\"ravi\""));
  EXPECT_THAT(text, HasSubstr("\"kind\":\"command\""));
  EXPECT_THAT(text, HasSubstr("\"kind\":\"message\""));
}

TEST_F(DeskRecoveryTest, ALineFromBeforeKindsWereJournaledIsRedeliveredAsBefore) {
  earlier("/pause");  // no "kind": handled as deskd always handled a re-delivery
  start_on_journal();
  wait_for("TURN_FINISHED");
  EXPECT_EQ(runner_->turns_started, 1);
  EXPECT_FALSE(find("TRIGGER_REDELIVERED")->data.contains("as"));
}

TEST_F(DeskRecoveryTest, EachRedeliveredTriggerSaysWhyAndTheModelHearsOfACutShortTurn) {
  earlier("never started", Trigger::Kind::message);
  const Trigger interrupted = earlier("interrupted", Trigger::Kind::message);
  write(event_kind::kTurnStarted, {{"trigger", interrupted.id}});
  start_on_journal();
  wait_for("TURN_FINISHED", 1);
  const Event& first = wait_for("TRIGGER_REDELIVERED");
  const Event& second = wait_for("TRIGGER_REDELIVERED", 1);
  EXPECT_THAT(std::string(first.data.at("reason").as_string()), HasSubstr("deskd stopped before handling it"));
  EXPECT_THAT(std::string(second.data.at("reason").as_string()), HasSubstr("Its turn had begun"));
  ASSERT_EQ(runner_->messages.size(), 2u);
  EXPECT_THAT(runner_->messages[0], HasSubstr("re-delivered after a restart."));
  EXPECT_THAT(runner_->messages[1], HasSubstr("re-delivered after a restart (its earlier turn was cut short"));
}

TEST_F(DeskRecoveryTest, ATriggerWhoseTurnEndedIsFinishedNotRunTwice) {
  const Trigger done = earlier("done already", Trigger::Kind::message);
  write(event_kind::kTurnStarted, {{"trigger", done.id}});
  write(event_kind::kTurnFinished, {{"trigger", done.id}, {"reply", "all done"}});
  start_on_journal();
  const Event& finished = wait_for("TRIGGER_FINISHED");
  EXPECT_EQ(finished.data.at("trigger").as_string(), done.id);
  EXPECT_THAT(std::string(finished.data.at("recovered").as_string()), HasSubstr("it is not run again"));
  EXPECT_EQ(find("TRIGGER_REDELIVERED"), nullptr);
  EXPECT_EQ(runner_->turns_started, 0);
  EXPECT_TRUE(Journal::read(journal_path())->open_triggers().empty());
}

TEST_F(DeskRecoveryTest, ADamagedLineIsReportedAndTheRestRecovered) {
  earlier("before the damage", Trigger::Kind::message);
  std::ofstream(journal_path(), std::ios::app) << "{\"id\":\"e-7\",\"kind\":\"MODEL_TE\x01\x02\n";
  earlier("after the damage", Trigger::Kind::message);
  start_on_journal();
  wait_for("TURN_FINISHED", 1);
  const Event& damaged = wait_for("JOURNAL_DAMAGED");
  EXPECT_EQ(damaged.data.at("line"), 2);
  // Rewritten without it; the line is where the report says, in the journal as it was.
  EXPECT_EQ(damaged.data.at("file").as_string(), journal_path().native() + ".1");
  EXPECT_THAT(std::string(damaged.data.at("error").as_string()), HasSubstr(journal_path().native() + ".1:2: the line is not JSON"));
  EXPECT_NE(find("JOURNAL_COMPACTED"), nullptr);
  EXPECT_EQ(runner_->messages.size(), 2u);
  restart_on_journal();
  EXPECT_EQ(find("JOURNAL_DAMAGED"), nullptr);  // told once
}

TEST_F(DeskRecoveryTest, AFinishLineTheDiskRefusedIsToldThenAndReportedAsRedelivered) {
  runner_->block = true;
  start_on_journal();
  ASSERT_TRUE(desk_->submit(message("place the order")).ok());
  wait_for("TURN_STARTED");
  {
    FileSizeLimit full(std::filesystem::file_size(journal_path()));
    runner_->release();
    const Event& refused = wait_for("JOURNAL_WRITE_FAILED");
    EXPECT_EQ(refused.data.at("kind"), "MODEL_TEXT");
    wait_for("TRIGGER_FINISHED");
    run_until([&] { return count("JOURNAL_WRITE_FAILED") >= 3; });
    std::vector<std::string> refused_kinds;
    for (const Event& event : events_) {
      if (event.kind == "JOURNAL_WRITE_FAILED") refused_kinds.emplace_back(event.data.at("kind").as_string());
    }
    EXPECT_EQ(refused_kinds, (std::vector<std::string>{"MODEL_TEXT", "TURN_FINISHED", "TRIGGER_FINISHED"}));
    stop_desk();  // deskd dies before the disk has room again: the held lines are lost
    desk_.reset();
    journal_.reset();
  }
  runner_ = std::make_shared<FakeTurnRunner>(context_);
  run_ended_ = false;
  events_.clear();
  start_on_journal();
  const Event& redelivered = wait_for("TRIGGER_REDELIVERED");
  EXPECT_THAT(std::string(redelivered.data.at("reason").as_string()), HasSubstr("could not take the turn's end"));
  wait_for("TURN_FINISHED");
  EXPECT_THAT(runner_->messages[0], HasSubstr("cut short"));
}

TEST_F(DeskRecoveryTest, TriggersFromTheJournalGoAheadOfThoseThatArrivedWhileItWasRead) {
  earlier("from before", Trigger::Kind::message);
  journal_.emplace(Journal::open(journal_path()).value());
  DeskParts parts;
  parts.journal = &*journal_;
  desk_ = std::make_unique<DeskRuntime>(context_.get_executor(), DeskSettings{.name = "nifty"}, bus_, runner_, clock_, parts);
  ASSERT_TRUE(desk_->submit(message("from after")).ok());  // before the desk runs
  asio::co_spawn(context_, desk_->run(), asio::bind_cancellation_slot(stop_.slot(), [this](std::exception_ptr) { run_ended_ = true; }));
  wait_for("TURN_FINISHED", 1);
  ASSERT_EQ(runner_->messages.size(), 2u);
  EXPECT_THAT(runner_->messages[0], HasSubstr("from before"));
  EXPECT_THAT(runner_->messages[1], HasSubstr("from after"));
  EXPECT_THAT(runner_->messages[1], Not(HasSubstr("re-delivered")));
  EXPECT_EQ(count("TRIGGER_REDELIVERED"), 1u);
}

TEST_F(DeskRecoveryTest, AJournalPastItsLimitIsCompactedWhileTheDeskRuns) {
  Journal::Limits limits;
  limits.compact_past_bytes = 64 * 1024;
  limits.kept_tail = {.events = 20, .bytes = 1024 * 1024};
  start_on_journal(limits);
  // About 7 KiB of lines a trigger, one after the other: 280 KiB in all.
  for (std::size_t index = 0; index < 40; ++index) {
    ASSERT_TRUE(desk_->submit(message(std::string(3000, 'a') + std::to_string(index))).ok());
    wait_for("TURN_FINISHED", index);
  }
  run_until([&] { return find("JOURNAL_COMPACTED", 1) != nullptr; });
  const Event& compacted = *find("JOURNAL_COMPACTED");
  EXPECT_LT(compacted.data.at("bytes_after").as_uint64(), compacted.data.at("bytes_before").as_uint64());
  stop_desk();
  EXPECT_LT(std::filesystem::file_size(journal_path()), 128 * 1024u);
  EXPECT_TRUE(Journal::read(journal_path())->open_triggers().empty());
}

}  // namespace
}  // namespace deskd::desk
