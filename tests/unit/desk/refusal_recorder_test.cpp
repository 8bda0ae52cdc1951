// The desk's refusal recorder: folding and the per-minute cap on an injected clock, and the
// seccomp listener against a real sandboxed bash — a refused call is answered with EPERM,
// recorded as REFUSED, and named at the end of the command's output.

#include "runner/desk/refusal_recorder.h"

#include <signal.h>
#include <stdlib.h>

#include <boost/asio.hpp>
#include <filesystem>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "policy/confinement.h"
#include "runner/tools/bash_session.h"
#include "sandbox/desk_preparation.h"
#include "sandbox/seccomp_notification.h"

namespace deskd::desk {
namespace {

namespace asio = boost::asio;
namespace fs = std::filesystem;
using ::testing::HasSubstr;

[[maybe_unused]] const bool kSigpipeIgnoredForRefusals = [] { return ::signal(SIGPIPE, SIG_IGN) != SIG_ERR; }();

class RefusalRecorderTest : public ::testing::Test {
 protected:
  RefusalRecorderTest() : bus_(clock_) {
    subscription_ = bus_.subscribe(context_.get_executor(), 100000, std::size_t{1} << 30);
    recorder_ = DeskRefusalRecorder::create(context_.get_executor(), bus_, "nifty", clock_);
  }
  // The REFUSED events published so far, but for glibc's nscd probe (socket AF_UNIX), which
  // every bash makes as it starts: a probe, folded over an hour, that tests do not count.
  std::vector<Event> refused() {
    std::vector<Event> events;
    while (auto event = subscription_->try_next()) {
      if (event->kind != event_kind::kRefused) continue;
      if (event->data.at("what") == "socket(2) AF_UNIX") {
        probes_.push_back(std::move(*event));
        continue;
      }
      events.push_back(std::move(*event));
    }
    return events;
  }
  std::vector<Event> probes_;
  static sandbox::Refusal mount_refusal() {
    return sandbox::Refusal{sandbox::Enforcer::seccomp, "mount(2)", "arguments 0x1", "desks may not mount file systems",
                            sandbox::RefusedProcess{7, "bash", "/usr/bin/bash"}};
  }

  asio::io_context context_;
  ManualClock clock_{Clock::TimePoint{} + std::chrono::hours(1000)};
  EventBus bus_;
  std::shared_ptr<EventSubscription> subscription_;
  std::shared_ptr<DeskRefusalRecorder> recorder_;
};

TEST_F(RefusalRecorderTest, ARefusalIsOneRecordWithItsFields) {
  bus_.publish("nifty", event_kind::kTurnStarted, {{"trigger", "t-1"}});
  bus_.publish("nifty", event_kind::kToolCalled, {{"trigger", "t-1"}, {"tool", "bash"}, {"id", "call-9"}});
  recorder_->record(mount_refusal());
  const auto events = refused();
  ASSERT_EQ(events.size(), 1u);
  const auto& data = events[0].data;
  EXPECT_EQ(data.at("enforcer"), "seccomp");
  EXPECT_EQ(data.at("what"), "mount(2)");
  EXPECT_EQ(data.at("details"), "arguments 0x1");
  EXPECT_EQ(data.at("rule"), "desks may not mount file systems");
  EXPECT_EQ(data.at("pid"), 7);
  EXPECT_EQ(data.at("comm"), "bash");
  EXPECT_EQ(data.at("exe"), "/usr/bin/bash");
  EXPECT_EQ(data.at("trigger"), "t-1");
  EXPECT_EQ(data.at("tool_call"), "call-9");
  EXPECT_EQ(data.at("count"), 1);
}

TEST_F(RefusalRecorderTest, RepeatsWithinTheWindowAreFoldedIntoOneRecordWithACount) {
  for (int repeat = 0; repeat < 1000; ++repeat) recorder_->record(mount_refusal());
  EXPECT_EQ(refused().size(), 1u);
  clock_.advance(DeskRefusalRecorder::kFoldWindow);
  recorder_->flush();
  const auto events = refused();
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].data.at("count"), 999);
  EXPECT_EQ(events[0].data.at("folded"), 999);
}

TEST_F(RefusalRecorderTest, TheNextCommandsMarkTellsTheRepeatsOfAWindowThatIsOver) {
  recorder_->record(mount_refusal());
  recorder_->record(mount_refusal());
  EXPECT_EQ(refused().size(), 1u);
  recorder_->mark();
  EXPECT_TRUE(refused().empty());  // the window is still open
  clock_.advance(DeskRefusalRecorder::kFoldWindow);
  recorder_->mark();
  const auto events = refused();
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].data.at("count"), 1);
  EXPECT_EQ(events[0].data.at("folded"), 1);
}

TEST_F(RefusalRecorderTest, RecordsPerMinuteAreCappedAndTheDroppedCounted) {
  for (int index = 0; index < 100; ++index) {
    auto refusal = mount_refusal();
    refusal.what = "host" + std::to_string(index) + ":443";
    recorder_->record(std::move(refusal));
  }
  EXPECT_EQ(refused().size(), DeskRefusalRecorder::kRecordsPerMinute);
  clock_.advance(std::chrono::minutes(1));
  recorder_->record(mount_refusal());
  const auto events = refused();
  ASSERT_FALSE(events.empty());
  EXPECT_EQ(events.back().data.at("dropped_before"), 100 - DeskRefusalRecorder::kRecordsPerMinute);
}

TEST_F(RefusalRecorderTest, MemoryStaysBoundedWhateverIsRefused) {
  for (int index = 0; index < 20000; ++index) {
    auto refusal = mount_refusal();
    refusal.what = "path " + std::to_string(index);
    recorder_->record(std::move(refusal));
  }
  EXPECT_LE(recorder_->lines_since(0).size(), DeskRefusalRecorder::kLinesKept);
  EXPECT_LE(refused().size(), DeskRefusalRecorder::kRecordsPerMinute);
}

TEST_F(RefusalRecorderTest, LinesSinceAMarkNameEachDistinctRefusalOnce) {
  recorder_->record(mount_refusal());
  const auto mark = recorder_->mark();
  recorder_->record(mount_refusal());
  recorder_->record(mount_refusal());
  EXPECT_EQ(recorder_->lines_since(mark),
            std::vector<std::string>{"deskd refused: mount(2) \u2014 desks may not mount file systems"});
  EXPECT_TRUE(recorder_->lines_since(recorder_->mark()).empty());
}

class RefusedInSandboxTest : public RefusalRecorderTest {
 protected:
  void SetUp() override {
    if (!sandbox::seccomp_user_notification_available()) GTEST_SKIP() << "this kernel has no seccomp user notification";
    char pattern[] = "/var/tmp/deskd-refusals-XXXXXX";
    root_ = ::mkdtemp(pattern);
    fs::permissions(root_, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                               fs::perms::others_read | fs::perms::others_exec);
    fs::create_directories(root_ / "desk");
    auto confinement = policy::Confinement::create(root_ / "desk", {}).value();
    auto spec = sandbox::SandboxSpecBuilder(confinement).build().value();
    ASSERT_TRUE(sandbox::prepare_desk_for_sandbox(spec).ok());
    spec.refusals = recorder_;
    session_ = std::make_unique<tools::BashSession>(context_.get_executor(), spec, 10, 20000);
  }
  void TearDown() override {
    session_.reset();
    if (!root_.empty()) fs::remove_all(root_);
  }
  tools::CommandOutcome run(const std::string& command) {
    auto future = asio::co_spawn(context_, session_->run(command), asio::use_future);
    context_.restart();
    // The listener's watch keeps the loop busy for good: run until the command is done.
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (future.wait_for(std::chrono::seconds(0)) != std::future_status::ready &&
           std::chrono::steady_clock::now() < deadline) {
      context_.run_one_for(std::chrono::milliseconds(50));
    }
    return future.get();
  }

  fs::path root_;
  std::unique_ptr<tools::BashSession> session_;
};

TEST_F(RefusedInSandboxTest, ARefusedCallGetsEpermAndIsNamedInTheOutput) {
  const tools::CommandOutcome outcome = run("unshare -m true; echo status $?");
  EXPECT_THAT(outcome.output, HasSubstr("unshare failed: Operation not permitted"));
  EXPECT_THAT(outcome.output, HasSubstr("status 1"));
  EXPECT_THAT(outcome.output, HasSubstr("deskd refused: unshare(2) \u2014 desks may not make or enter namespaces"));
  const auto events = refused();
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].data.at("enforcer"), "seccomp");
  EXPECT_EQ(events[0].data.at("what"), "unshare(2)");
  EXPECT_EQ(events[0].data.at("comm"), "unshare");
  EXPECT_EQ(events[0].data.at("exe"), "/usr/bin/unshare");
  EXPECT_GT(events[0].data.at("pid").as_int64(), 1);
  EXPECT_EQ(recorder_->listeners(), 1u);
}

TEST_F(RefusedInSandboxTest, AnAllowedCommandSaysNothingMore) {
  EXPECT_EQ(run("echo fine").output, "fine\n");
  EXPECT_TRUE(refused().empty());
}

TEST_F(RefusedInSandboxTest, GlibcsNscdProbeIsRecordedOnceAndNotShownToTheModel) {
  EXPECT_EQ(run("echo one").output, "one\n");
  EXPECT_EQ(run("bash -c 'echo two'").output, "two\n");
  refused();
  ASSERT_LE(probes_.size(), 1u);
  for (const Event& probe : probes_) EXPECT_EQ(probe.data.at("enforcer"), "seccomp");
}

TEST_F(RefusedInSandboxTest, ALoopOfRefusedCallsIsFoldedAndAnswered) {
  const tools::CommandOutcome outcome = run(
      "python3 -c 'import ctypes\nlibc = ctypes.CDLL(None)\n"
      "print(sum(1 for _ in range(20000) if libc.syscall(165, 0, 0, 0, 0, 0) == -1 and ctypes.get_errno() in (0, 1)))'");
  EXPECT_THAT(outcome.output, HasSubstr("20000"));
  EXPECT_THAT(outcome.output, HasSubstr("deskd refused: mount(2)"));
  EXPECT_EQ(refused().size(), 1u);
}

}  // namespace
}  // namespace deskd::desk
