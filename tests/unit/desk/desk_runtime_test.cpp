// DeskRuntime with a controllable fake turn runner: one trigger at a time, steering,
// commands beside a running turn, /stop, stalls, pause, rollover, re-delivery, threads.

#include "runner/desk/desk_runtime.h"

#include <boost/asio.hpp>
#include <filesystem>
#include <fstream>
#include <thread>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "runner/desk/market_status.h"
#include "runner/desk/session_keeper.h"
#include "runner/desk/skill_library.h"
#include "runner/journal/journal.h"
#include "unit/desk/desk_runtime_fixture.h"

namespace deskd::desk {
namespace {

namespace asio = boost::asio;
using ::testing::HasSubstr;
using ::testing::StartsWith;

using testing::DeskRuntimeTest;
using testing::FakeTurnRunner;

TEST_F(DeskRuntimeTest, RefusesATriggerForAnotherDesk) {
  start_desk();
  const auto refused = desk_->submit(message("hello", "banknifty"));
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().what, "Trigger for desk 'banknifty' was sent to desk 'nifty'");
}

TEST_F(DeskRuntimeTest, StartsIdleAndRunsATurnWithTheContextLine) {
  EXPECT_EQ(DeskRuntime(context_.get_executor(), {.name = "nifty"}, bus_, runner_, clock_).state(), DeskState::stopped);
  start_desk();
  EXPECT_EQ(desk_->state(), DeskState::idle);
  ASSERT_TRUE(desk_->submit(message("what is the plan?")).ok());
  const Event& finished = wait_for("TURN_FINISHED");
  EXPECT_EQ(reply_of(finished), "reply to what is the plan?");
  ASSERT_EQ(runner_->messages.size(), 1u);
  EXPECT_THAT(runner_->messages[0], StartsWith("It is Monday 30 November 2026, 09:14:05 IST. Woken by a message from ravi.\n\n"));
  EXPECT_EQ(desk_->state(), DeskState::idle);
}

TEST_F(DeskRuntimeTest, ATurnWhoseReplyWasCutFinishesSayingSo) {
  start_desk();
  ASSERT_TRUE(desk_->submit(message("whole")).ok());
  EXPECT_FALSE(wait_for("TURN_FINISHED").data.contains("cut"));
  runner_->cut_reason = "max_tokens";
  ASSERT_TRUE(desk_->submit(message("long")).ok());
  const Event& cut = wait_for("TURN_FINISHED", 1);
  EXPECT_EQ(reply_of(cut), "reply to long");
  EXPECT_EQ(cut.data.at("cut"), "max_tokens");
  wait_for("TRIGGER_FINISHED", 1);  // a cut turn is still done: a restart does not run it again
}

TEST_F(DeskRuntimeTest, HandlesOneTriggerAtATime) {
  runner_->block = true;
  start_desk();
  ASSERT_TRUE(desk_->submit(message("first")).ok());
  wait_for("TURN_STARTED");
  ASSERT_TRUE(desk_->submit(message("/queue second")).ok());
  wait_for("TRIGGER_QUEUED", 1);
  EXPECT_EQ(runner_->turns_started, 1);
  EXPECT_EQ(desk_->queued_count(), 1u);
  runner_->block = false;
  runner_->release();
  wait_for("TURN_FINISHED");
  wait_for("TURN_FINISHED", 1);
  EXPECT_EQ(runner_->turns_started, 2);
  EXPECT_THAT(runner_->messages[1], HasSubstr("\n\nsecond"));
}

TEST_F(DeskRuntimeTest, ADrainingDeskFinishesItsTurnAndStartsNoOther) {
  runner_->block = true;
  start_desk();
  ASSERT_TRUE(desk_->submit(message("first")).ok());
  wait_for("TURN_STARTED");
  ASSERT_TRUE(desk_->submit(message("/queue second")).ok());
  wait_for("TRIGGER_QUEUED", 1);
  desk_->drain();
  runner_->block = false;
  runner_->release();
  wait_for("TURN_FINISHED");
  // Give the loop every chance to start the queued trigger; it must not.
  for (int round = 0; round < 20; ++round) {
    context_.restart();
    context_.run_for(std::chrono::milliseconds(5));
  }
  EXPECT_EQ(runner_->turns_started, 1);
  EXPECT_EQ(desk_->state(), DeskState::idle);
  stop_desk();
  EXPECT_TRUE(run_ended_);
}

TEST_F(DeskRuntimeTest, MessageDuringATurnSteersIt) {
  runner_->block = true;
  start_desk();
  ASSERT_TRUE(desk_->submit(message("first")).ok());
  wait_for("TURN_STARTED");
  ASSERT_TRUE(desk_->submit(message("also check banknifty")).ok());
  wait_for("STEERING_QUEUED");
  runner_->release();
  wait_for("TURN_FINISHED");
  EXPECT_EQ(runner_->steered, std::vector<std::string>{"also check banknifty"});
  EXPECT_NE(find("STEERING_DELIVERED"), nullptr);
  EXPECT_EQ(runner_->turns_started, 1);
}

// The journal's recovery reads STEERING_DELIVERED back (a delivered message was handled by
// its turn); once they were published on the bus only and never reached the journal.
TEST_F(DeskRuntimeTest, SteeringEventsAreJournaled) {
  const auto journal_path = state_ / "journal.jsonl";
  auto journal = Journal::open(journal_path);
  ASSERT_TRUE(journal.ok());
  DeskParts parts;
  parts.journal = &*journal;
  runner_->block = true;
  start_desk(parts);
  ASSERT_TRUE(desk_->submit(message("first")).ok());
  wait_for("TURN_STARTED");
  ASSERT_TRUE(desk_->submit(message("also check banknifty")).ok());
  wait_for("STEERING_QUEUED");
  runner_->release();
  wait_for("TURN_FINISHED");
  stop_desk();
  std::ifstream file(journal_path);
  const std::string text((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  EXPECT_THAT(text, HasSubstr(R"("kind":"STEERING_QUEUED")"));
  EXPECT_THAT(text, HasSubstr(R"("kind":"STEERING_DELIVERED")"));
}

TEST_F(DeskRuntimeTest, SteeringTheTurnNeverPickedUpBecomesTheNextTrigger) {
  runner_->block = true;
  runner_->take_steering = false;
  start_desk();
  ASSERT_TRUE(desk_->submit(message("first")).ok());
  wait_for("TURN_STARTED");
  ASSERT_TRUE(desk_->submit(message("late thought")).ok());
  wait_for("STEERING_QUEUED");
  runner_->block = false;
  runner_->release();
  wait_for("TURN_FINISHED", 1);
  ASSERT_EQ(runner_->messages.size(), 2u);
  EXPECT_THAT(runner_->messages[1], HasSubstr("\n\nlate thought"));
}

TEST_F(DeskRuntimeTest, StopCancelsTheRunningTurnAndTheQueueGoesOn) {
  runner_->block = true;
  start_desk();
  ASSERT_TRUE(desk_->submit(message("long work")).ok());
  wait_for("TURN_STARTED");
  ASSERT_TRUE(desk_->submit(message("/queue next")).ok());
  wait_for("TRIGGER_QUEUED", 1);
  runner_->block = false;
  const auto before = std::chrono::steady_clock::now();
  ASSERT_TRUE(desk_->submit(message("/stop")).ok());
  wait_for("TURN_STOPPED");
  EXPECT_LT(std::chrono::steady_clock::now() - before, std::chrono::seconds(1));
  EXPECT_THAT(reply_of(wait_for("COMMAND_ANSWERED")), HasSubstr("Stopping"));
  wait_for("TURN_FINISHED");
  EXPECT_THAT(runner_->messages.back(), HasSubstr("\n\nnext"));
}

TEST_F(DeskRuntimeTest, ReadOnlyCommandsAndBtwAreAnsweredBesideARunningTurn) {
  runner_->block = true;
  start_desk();
  ASSERT_TRUE(desk_->submit(message("long work")).ok());
  wait_for("TURN_STARTED");
  ASSERT_TRUE(desk_->submit(message("/status")).ok());
  const std::string status = reply_of(wait_for("COMMAND_ANSWERED"));
  EXPECT_THAT(status, HasSubstr("running a turn"));
  EXPECT_THAT(status, HasSubstr("Mode: dry_run"));
  ASSERT_TRUE(desk_->submit(message("/btw what is the lot size?")).ok());
  EXPECT_EQ(reply_of(wait_for("COMMAND_ANSWERED", 1)), "side answer: what is the lot size?");
  ASSERT_TRUE(desk_->submit(message("/help")).ok());
  EXPECT_THAT(reply_of(wait_for("COMMAND_ANSWERED", 2)), HasSubstr("/stop"));
  EXPECT_EQ(find("TURN_FINISHED"), nullptr);
  runner_->release();
  wait_for("TURN_FINISHED");
}

TEST_F(DeskRuntimeTest, UnknownCommandNamesHelp) {
  start_desk();
  ASSERT_TRUE(desk_->submit(message("/frobnicate now")).ok());
  EXPECT_EQ(reply_of(wait_for("COMMAND_ANSWERED")), "Unknown command /frobnicate. Send /help for the list of commands.");
}

// /approvals reads what the assembly gave it (the desk knows no API gate), beside a turn.
TEST_F(DeskRuntimeTest, ApprovalsWithoutAnApiGate) {
  start_desk();
  ASSERT_TRUE(desk_->submit(message("/approvals")).ok());
  EXPECT_EQ(reply_of(wait_for("COMMAND_ANSWERED")), "This desk has no API gate, so nothing waits for approval.");
}

TEST_F(DeskRuntimeTest, ApprovalsIsAnsweredBesideATurn) {
  runner_->block = true;
  DeskParts parts;
  parts.approvals_text = [] { return std::string("ap-0123456789ab  kite  POST /orders/regular  expires in 41 s"); };
  start_desk(parts);
  ASSERT_TRUE(desk_->submit(message("long work")).ok());
  wait_for("TURN_STARTED");
  ASSERT_TRUE(desk_->submit(message("/approvals")).ok());
  EXPECT_EQ(reply_of(wait_for("COMMAND_ANSWERED")), "ap-0123456789ab  kite  POST /orders/regular  expires in 41 s");
  ASSERT_TRUE(desk_->submit(message("/help")).ok());
  EXPECT_THAT(reply_of(wait_for("COMMAND_ANSWERED", 1)), HasSubstr("/approvals - the desk's API calls waiting"));
  runner_->release();
  wait_for("TURN_FINISHED");
}

TEST_F(DeskRuntimeTest, APausedDeskAnswersWithoutAskingAModel) {
  start_desk();
  ASSERT_TRUE(desk_->submit(message("/pause")).ok());
  wait_for("COMMAND_ANSWERED");
  EXPECT_TRUE(desk_->paused());
  ASSERT_TRUE(desk_->submit(message("hello")).ok());
  EXPECT_THAT(reply_of(wait_for("TURN_FINISHED")), HasSubstr("paused"));
  EXPECT_EQ(runner_->turns_started, 0);
  ASSERT_TRUE(desk_->submit(message("/resume")).ok());
  ASSERT_TRUE(desk_->submit(message("hello again")).ok());
  wait_for("TURN_FINISHED", 1);
  EXPECT_EQ(runner_->turns_started, 1);
}

TEST_F(DeskRuntimeTest, AStalledTurnIsEndedVisibly) {
  runner_->block = true;
  DeskSettings settings;
  settings.stall_timeout = std::chrono::milliseconds(200);
  start_desk({}, settings);
  ASSERT_TRUE(desk_->submit(message("stuck")).ok());
  const Event& failed = wait_for("TURN_FAILED");
  EXPECT_THAT(std::string(failed.data.at("error").as_string()), HasSubstr("stalled"));
  runner_->block = false;
  ASSERT_TRUE(desk_->submit(message("after")).ok());
  wait_for("TURN_FINISHED");
}

TEST_F(DeskRuntimeTest, StoppingTheDeskClosesItsParts) {
  start_desk();
  stop_desk();
  EXPECT_TRUE(runner_->closed);
  EXPECT_EQ(desk_->state(), DeskState::stopped);
  run_until([&] { return find("DESK_STOPPED") != nullptr; });
}

TEST_F(DeskRuntimeTest, SubmitFromManyThreadsLosesAndDuplicatesNothing) {
  start_desk();
  std::vector<std::thread> threads;
  for (int thread = 0; thread < 4; ++thread) {
    threads.emplace_back([&, thread] {
      for (int index = 0; index < 50; ++index) {
        ASSERT_TRUE(desk_->submit(message("m" + std::to_string(thread) + "-" + std::to_string(index))).ok());
      }
    });
  }
  for (auto& thread : threads) thread.join();
  run_until([&] { return count("TURN_FINISHED") == 200; });
  std::set<std::string> seen(runner_->messages.begin(), runner_->messages.end());
  EXPECT_EQ(seen.size(), 200u);
}

TEST_F(DeskRuntimeTest, AcceptedButUnfinishedTriggersAreRedeliveredAfterARestart) {
  const auto journal_path = state_ / "journal.jsonl";
  {
    auto journal = Journal::open(journal_path);
    ASSERT_TRUE(journal.ok());
    DeskParts parts;
    parts.journal = &*journal;
    runner_->block = true;
    start_desk(parts);
    ASSERT_TRUE(desk_->submit(message("do not lose me")).ok());
    wait_for("TURN_STARTED");
    stop_desk();  // as if the daemon died mid-turn
    desk_.reset();
  }
  runner_ = std::make_shared<FakeTurnRunner>(context_);
  run_ended_ = false;
  events_.clear();
  auto journal = Journal::open(journal_path);
  DeskParts parts;
  parts.journal = &*journal;
  start_desk(parts);
  wait_for("TURN_FINISHED");
  ASSERT_EQ(runner_->messages.size(), 1u);
  EXPECT_THAT(runner_->messages[0], HasSubstr("re-delivered after a restart"));
  EXPECT_THAT(runner_->messages[0], HasSubstr("do not lose me"));
  stop_desk();  // before the journal it writes to goes out of scope
}

TEST_F(DeskRuntimeTest, RollsOverBeforeTheFirstTurnOfANewIndiaDay) {
  SessionKeeper keeper(state_ / "sessions", clock_);
  DeskParts parts;
  parts.session_keeper = &keeper;
  start_desk(parts);
  ASSERT_EQ(runner_->resumed.size(), 1u);
  const std::string first = keeper.session().id;
  ASSERT_TRUE(desk_->submit(message("morning")).ok());
  wait_for("TURN_FINISHED");
  EXPECT_EQ(runner_->summaries, 0);
  clock_.advance(std::chrono::hours(24));
  ASSERT_TRUE(desk_->submit(message("next morning")).ok());
  wait_for("TURN_FINISHED", 1);
  EXPECT_EQ(runner_->summaries, 1);
  EXPECT_NE(find("SESSION_ROLLED_OVER"), nullptr);
  EXPECT_NE(keeper.session().id, first);
  EXPECT_EQ(keeper.session().summary, "the day in brief");
  EXPECT_TRUE(std::filesystem::exists(state_ / "sessions/archive" / (first + ".json")));
  stop_desk();  // before the keeper goes out of scope
}

TEST_F(DeskRuntimeTest, RolloverCommandAndItsRepliesFromTheSeed) {
  start_desk();
  ASSERT_TRUE(desk_->submit(message("/rollover")).ok());
  EXPECT_EQ(reply_of(wait_for("COMMAND_ANSWERED")), "This desk keeps no sessions, so there is nothing to roll over.");
  stop_desk();
  SessionKeeper keeper(state_ / "sessions", clock_);
  DeskParts parts;
  parts.session_keeper = &keeper;
  run_ended_ = false;
  events_.clear();
  start_desk(parts);
  ASSERT_TRUE(desk_->submit(message("/rollover")).ok());
  const std::string reply = reply_of(wait_for("COMMAND_ANSWERED"));
  EXPECT_EQ(reply, "Rolled over: the day is summarised and session " + keeper.session().id + " has started.");
  stop_desk();  // before the keeper goes out of scope
}

TEST_F(DeskRuntimeTest, TheContextLineCarriesTheMarketStatus) {
  const MarketStatus market;
  DeskParts parts;
  parts.market_status = &market;
  start_desk(parts);
  ASSERT_TRUE(desk_->submit(message("how is the market?")).ok());
  wait_for("TURN_FINISHED");
  // 09:14:05 IST on a Monday: the pre-open.
  EXPECT_THAT(runner_->messages[0], HasSubstr(" IST. Woken by a message from ravi.\nNSE: pre-open until 09:15 IST\n\nhow is the market?"));
}

TEST_F(DeskRuntimeTest, ASkillRunsAsATurnWithItsInstructions) {
  const auto desk_folder = state_ / "desk";
  std::filesystem::create_directories(desk_folder / "skills/morning-brief");
  std::ofstream(desk_folder / "skills/morning-brief/SKILL.md")
      << "---\nname: morning-brief\ndescription: Summarise the overnight news.\n---\nRead notes/ and write a brief.\n";
  const SkillLibrary skills = SkillLibrary::scan(desk_folder);
  ASSERT_EQ(skills.skills().size(), 1u);
  DeskParts parts;
  parts.skill_library = &skills;
  start_desk(parts);
  ASSERT_TRUE(desk_->submit(message("/help")).ok());
  EXPECT_THAT(reply_of(wait_for("COMMAND_ANSWERED")), HasSubstr("/morning-brief - Summarise the overnight news."));
  ASSERT_TRUE(desk_->submit(message("/morning-brief focus on banks")).ok());
  wait_for("TURN_FINISHED");
  ASSERT_EQ(runner_->messages.size(), 1u);
  EXPECT_THAT(runner_->messages[0], HasSubstr("Read notes/ and write a brief."));
  EXPECT_THAT(runner_->messages[0], HasSubstr("focus on banks"));
}

}  // namespace
}  // namespace deskd::desk
