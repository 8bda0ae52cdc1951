// BashSession against a real sandboxed bash: the seed's behaviour, and every input that
// breaks other agents' bash tools.

#include "runner/tools/bash_session.h"

#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include <boost/asio.hpp>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "policy/confinement.h"
#include "sandbox/desk_preparation.h"

namespace deskd::tools {
namespace {

namespace asio = boost::asio;
namespace fs = std::filesystem;
using ::testing::EndsWith;

// As deskd does (serve, shell, run, mcp): a terminal that died between commands is a
// write error for the next one, not a signal that ends the process.
[[maybe_unused]] const bool kSigpipeIgnored = [] { return ::signal(SIGPIPE, SIG_IGN) != SIG_ERR; }();
using ::testing::HasSubstr;
using ::testing::StartsWith;

class BashSessionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/var/tmp/deskd-bash-XXXXXX";
    root_ = ::mkdtemp(pattern);
    fs::permissions(root_, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                               fs::perms::others_read | fs::perms::others_exec);
    fs::create_directories(root_ / "desk");
    auto confinement = policy::Confinement::create(root_ / "desk", {}).value();
    spec_ = sandbox::SandboxSpecBuilder(confinement).build().value();
    ASSERT_TRUE(sandbox::prepare_desk_for_sandbox(*spec_).ok());
    session_ = std::make_unique<BashSession>(context_.get_executor(), *spec_, timeout_seconds_, maximum_characters_);
  }
  void TearDown() override {
    session_.reset();
    fs::remove_all(root_);
  }

  template <typename T>
  T wait(asio::awaitable<T> operation) {
    auto future = asio::co_spawn(context_, std::move(operation), asio::use_future);
    context_.restart();
    context_.run();
    return future.get();
  }
  CommandOutcome run(const std::string& command) { return wait(session_->run(command)); }
  // Restarts the session and runs the loop only until the next terminal's sandbox exists,
  // most likely still setting itself up.
  void restart_until_the_next_sandbox_exists();
  void remake(double timeout_seconds, std::size_t maximum_characters) {
    session_ = std::make_unique<BashSession>(context_.get_executor(), *spec_, timeout_seconds, maximum_characters);
  }

  asio::io_context context_;
  fs::path root_;
  std::optional<sandbox::SandboxSpec> spec_;
  double timeout_seconds_ = 5;
  std::size_t maximum_characters_ = 20000;
  std::unique_ptr<BashSession> session_;
};

TEST_F(BashSessionTest, RunsACommandInTheDeskFolder) {
  const CommandOutcome outcome = run("pwd; echo out; echo err >&2; exit_code=3; (exit $exit_code)");
  EXPECT_EQ(outcome.output, (root_ / "desk").native() + "\nout\nerr\n");
  EXPECT_EQ(outcome.exit_status, 3);
  EXPECT_FALSE(outcome.truncated);
}

TEST_F(BashSessionTest, OutputIsExactlyWhatWasPrinted) {
  EXPECT_EQ(run("printf 'no newline'").output, "no newline");
  EXPECT_EQ(run("true").output, "");
  EXPECT_EQ(run("printf '\\n\\n'").output, "\n\n");
}

TEST_F(BashSessionTest, StdoutAndStderrKeepTheirOrder) {
  EXPECT_EQ(run("echo 1; echo 2 >&2; echo 3; echo 4 >&2").output, "1\n2\n3\n4\n");
}

TEST_F(BashSessionTest, FolderVariablesFunctionsAndAliasesCarryOver) {
  run("mkdir -p scratch/a && cd scratch/a; export GREETING=namaste; double() { echo $(( $1 * 2 )); }; alias hi='echo hi there'");
  EXPECT_EQ(run("pwd").output, (root_ / "desk/scratch/a").native() + "\n");
  EXPECT_EQ(run("echo $GREETING").output, "namaste\n");
  EXPECT_EQ(run("double 21").output, "42\n");
  EXPECT_EQ(run("hi").output, "hi there\n");
}

TEST_F(BashSessionTest, InputIsDevNullAndThereIsNoTerminal) {
  EXPECT_EQ(run("cat; echo done").output, "done\n");
  EXPECT_EQ(run("read x; echo \"[$x] $?\"").output, "[] 1\n");
  EXPECT_EQ(run("python3 -c 'input()' 2>/dev/null; echo $?").output, "1\n");
  EXPECT_NE(run("echo hi > /dev/tty").exit_status, 0);
}

TEST_F(BashSessionTest, SyntaxErrorsReturnBashsErrorAndTheSessionLives) {
  run("export KEEP=yes");
  for (const char* broken : {"echo )", "echo 'unclosed", "echo \"unclosed", "if true; then", "cat <<EOF\nno end"}) {
    const CommandOutcome outcome = run(broken);
    EXPECT_TRUE(outcome.exit_status.has_value()) << broken;
    EXPECT_EQ(run("echo $KEEP").output, "yes\n") << "after " << broken;
  }
  EXPECT_THAT(run("echo )").output, HasSubstr("syntax error"));
  EXPECT_EQ(run("echo )").exit_status, 2);
}

TEST_F(BashSessionTest, EmptyAndCommentOnlyCommands) {
  EXPECT_EQ(run("").exit_status, 0);
  EXPECT_EQ(run("# just a comment").exit_status, 0);
  EXPECT_EQ(run("   \n\n").output, "");
}

// Traces show the command's own lines (one level deeper than at a prompt, as eval runs
// them), never the loop around them, its id or its report.
TEST_F(BashSessionTest, TracingDoesNotLeakTheMachinery) {
  const auto only_the_command = [](const std::string& output, const std::string& expected) {
    EXPECT_THAT(output, ::testing::Not(HasSubstr("__deskd"))) << output;
    EXPECT_THAT(output, ::testing::Not(HasSubstr("eval"))) << output;
    EXPECT_THAT(output, ::testing::Not(HasSubstr("printf"))) << output;
    EXPECT_THAT(output, EndsWith(expected)) << output;
  };
  only_the_command(run("set -x; echo hi").output, "+ echo hi\nhi\n");
  only_the_command(run("echo again").output, "+ echo again\nagain\n");
  only_the_command(run("set +x").output, "+ set +x\n");
  EXPECT_EQ(run("echo plain").output, "plain\n");
  only_the_command(run("set -v").output, "");
  only_the_command(run("echo v").output, "v\n");
  only_the_command(run("set -xv; echo both").output, "+ echo both\nboth\n");
  EXPECT_EQ(run("echo status $?").exit_status, 0);
}

TEST_F(BashSessionTest, RedirectingOrClosingStdoutDoesNotLoseTheEnd) {
  EXPECT_EQ(run("exec >/dev/null; echo hidden").exit_status, 0);
  EXPECT_EQ(run("echo still hidden").exit_status, 0);
  EXPECT_EQ(run("exec >&2; echo back").output, "back\n");
  EXPECT_EQ(run("exec 1>&-; echo closed").exit_status.has_value(), true);
}

// TMOUT is bash's default timeout for `read`; the loop's own reads of the next command
// must not take it, or a terminal left idle longer ends, and its state with it.
TEST_F(BashSessionTest, ATmoutSetByACommandDoesNotEndTheIdleTerminal) {
  EXPECT_EQ(run("export TMOUT=1; KEPT=yes; cd /tmp").exit_status, 0);
  ::usleep(1'600'000);
  const CommandOutcome outcome = run("echo $TMOUT $KEPT $PWD");
  EXPECT_EQ(outcome.output, "1 yes /tmp\n");
  EXPECT_EQ(outcome.exit_status, 0);
}

// A desk may name its own functions after the builtins the loop uses; they are its own,
// kept for its next commands, and the loop goes on with the builtins. Before, a function
// named read swallowed the next command until it timed out.
TEST_F(BashSessionTest, FunctionsNamedAfterTheLoopsBuiltinsAreTheCommandsOwn) {
  EXPECT_EQ(run("read() { echo R; }; printf() { echo P; }; eval() { echo E; }; [() { echo B; }; KEPT=yes").exit_status,
            0);
  CommandOutcome outcome = run("echo \"$KEPT  $(type -t read) $(type -t printf) $(type -t eval) $(type -t [)\"");
  EXPECT_EQ(outcome.output, "yes  function function function function\n");
  EXPECT_EQ(outcome.exit_status, 0);
  outcome = run("read; eval x");
  EXPECT_EQ(outcome.output, "R\nE\n");
  // A function named set, with tracing on: the loop's own switches still reach the builtin.
  EXPECT_EQ(run("set() { echo S; }; builtin set -x").exit_status, 0);
  outcome = run("echo traced");
  EXPECT_THAT(outcome.output, EndsWith("+ echo traced\ntraced\n"));
  EXPECT_THAT(outcome.output, ::testing::Not(HasSubstr("S\n")));
  EXPECT_EQ(outcome.exit_status, 0);
}

TEST_F(BashSessionTest, DebugTrapDoesNotEndTheCommandEarlyOrLate) {
  run("trap 'echo trapped' DEBUG");
  const CommandOutcome outcome = run("echo one; echo two");
  EXPECT_THAT(outcome.output, HasSubstr("one\n"));
  EXPECT_THAT(outcome.output, HasSubstr("two\n"));
  EXPECT_EQ(outcome.exit_status, 0);
  EXPECT_THAT(outcome.output, ::testing::Not(HasSubstr("__deskd")));
}

TEST_F(BashSessionTest, FakeMarkersAreJustOutput) {
  const CommandOutcome outcome =
      run("echo '__DESKD_MARK_0123456789abcdef 0'; printf '%s 0\\n' deadbeefdeadbeef; sleep 0.2; echo after");
  EXPECT_THAT(outcome.output, EndsWith("after\n"));
  EXPECT_EQ(outcome.exit_status, 0);
}

// The report travels on a pipe of its own, named by an id the command never sees before
// it runs: neither output shaped like a report nor a DEBUG trap printing onto the report
// pipe (its output lands there while the loop reports) can end a command early.
TEST_F(BashSessionTest, AFakeReportOnTheOutputOrFromATrapCannotEndTheCommandEarly) {
  const CommandOutcome printed =
      run("for i in 1 2 3; do printf '%016x %s\\n' $i 0; done; sleep 0.2; echo after; (exit 4)");
  EXPECT_THAT(printed.output, EndsWith("after\n"));
  EXPECT_EQ(printed.exit_status, 4);
  // The trap's text is before the report on the same line, and a report-shaped line.
  run("trap 'printf \"0000000000000000 0\\nx\"' DEBUG");
  const CommandOutcome trapped = run("sleep 0.2; echo late; (exit 5)");
  EXPECT_THAT(trapped.output, HasSubstr("late\n"));
  EXPECT_EQ(trapped.exit_status, 5);
  run("trap - DEBUG");
  EXPECT_EQ(run("echo next").output, "next\n");
}

// Commands come framed by length; bytes above 127 and backslashes must arrive as typed,
// whatever the locale counts as a character.
TEST_F(BashSessionTest, CommandsArriveByteForByte) {
  EXPECT_EQ(run("printf '%s\\n' 'h\xc3\xa9llo \\c \\\\ \\x41 \xe2\x82\xac'").output,
            "h\xc3\xa9llo \\c \\\\ \\x41 \xe2\x82\xac\n");
  EXPECT_EQ(run("echo '\xff\xfe' | od -An -tx1 | tr -d ' '").output, "fffe0a\n");
  const std::string long_command = "echo " + std::string(100'000, 'y') + " | wc -c";
  EXPECT_EQ(run(long_command).output, "100001\n");
  EXPECT_EQ(run("echo 'multi\nline' ; echo $((6 * 7))").output, "multi\nline\n42\n");
}

// What a command sees: /dev/null, the output twice, and nothing of the loop's descriptors
// in the programs it starts; a command that moves its own descriptors moves them for itself.
TEST_F(BashSessionTest, ProgramsSeeOnlyTheirThreeStreams) {
  EXPECT_EQ(run("ls /proc/self/fd | sort -n | tr '\\n' ' '").output, "0 1 2 3 ");  // 3: ls's own listing
  EXPECT_EQ(run("exec </dev/zero 2>/dev/null; head -c 2 | od -An -tx1 | tr -d ' '").output, "0000\n");
  EXPECT_EQ(run("cat; echo empty; echo err >&2").output, "empty\nerr\n");
}

TEST_F(BashSessionTest, StrayChildHoldingTheOutputDoesNotBlock) {
  const CommandOutcome outcome = run("sleep 30 & echo started");
  EXPECT_EQ(outcome.output, "started\n");
  EXPECT_EQ(run("echo next").output, "next\n");
}

TEST_F(BashSessionTest, CommandsThatEndTheShellAreReportedAndTheNextOneWorks) {
  struct Case {
    const char* command;
    std::optional<int> status;
  };
  for (const Case& test : {Case{"echo bye; exit 3", 3}, Case{"kill -9 $$", 137}, Case{"set -e; false", 1},
                           Case{"sleep infinity & exit 1", 1}, Case{"exec python3", 0}}) {
    run("cd scratch 2>/dev/null || cd /tmp; export GONE=1");
    const CommandOutcome outcome = run(test.command);
    EXPECT_EQ(outcome.exit_status, test.status) << test.command;
    EXPECT_THAT(outcome.output, HasSubstr("starts a fresh one")) << test.command;
    EXPECT_EQ(run("echo ${GONE:-reset}; pwd").output, "reset\n" + (root_ / "desk").native() + "\n") << test.command;
  }
  EXPECT_THAT(run("echo bye; exit 3").output, StartsWith("bye\n"));
}

TEST_F(BashSessionTest, TimeoutRestartsTheSessionWithTheSeedsMessage) {
  remake(0.5, 20000);
  run("export KEPT=1; sleep 60 &");
  const CommandOutcome outcome = run("echo partial; sleep 5");
  EXPECT_FALSE(outcome.exit_status.has_value());
  EXPECT_EQ(outcome.output,
            "The command did not finish within 0.5 seconds. The terminal was restarted, so the folder and "
            "variables are reset; use bash_background for long commands.\npartial\n");
  EXPECT_EQ(run("echo ${KEPT:-reset}; pgrep -c sleep || true").output, "reset\n0\n");
}

TEST_F(BashSessionTest, TimeoutMessageFormatsSecondsLikePython) {
  remake(1, 20000);
  EXPECT_THAT(run("sleep 3").output, StartsWith("The command did not finish within 1 seconds."));
}

TEST_F(BashSessionTest, LongOutputKeepsStartAndEnd) {
  remake(10, 100);
  const CommandOutcome outcome = run("seq 1 100000");
  EXPECT_TRUE(outcome.truncated);
  EXPECT_LE(outcome.output.size(), 100u);
  EXPECT_THAT(outcome.output, StartsWith("1\n2\n"));
  EXPECT_THAT(outcome.output, EndsWith("99999\n100000\n"));
  EXPECT_THAT(outcome.output, HasSubstr("characters left out"));
}

TEST_F(BashSessionTest, InvalidUtf8BecomesReplacementCharacters) {
  EXPECT_EQ(run("printf 'a\\xffb\\xc3\\xa9'").output,
            "a\xEF\xBF\xBD"
            "b\xC3\xA9");
}

TEST_F(BashSessionTest, ParallelCallsRunOneAfterAnotherInOrder) {
  std::vector<std::future<CommandOutcome>> results;
  for (int index = 0; index < 5; ++index) {
    results.push_back(asio::co_spawn(
        context_, session_->run("echo " + std::to_string(index) + " >> scratch/order; cat scratch/order | wc -l"),
        asio::use_future));
  }
  context_.restart();
  context_.run();
  for (int index = 0; index < 5; ++index) EXPECT_EQ(results[index].get().output, std::to_string(index + 1) + "\n");
}

TEST_F(BashSessionTest, BackgroundJobsRunAndReport) {
  const BackgroundStart job = wait(session_->run_in_background("echo started; sleep 0.3; echo done"));
  EXPECT_THAT(job.job_id, ::testing::MatchesRegex("[0-9a-f]{8}"));
  EXPECT_EQ(job.start.exit_status, 0);
  EXPECT_THAT(wait(session_->check_background(job.job_id)).output, StartsWith("running\n"));
  ::usleep(600000);
  EXPECT_EQ(wait(session_->check_background(job.job_id)).output, "finished\nstarted\ndone\n");
  EXPECT_TRUE(fs::exists(root_ / "desk/scratch/background-jobs" / (job.job_id + ".log")));
}

TEST_F(BashSessionTest, UnknownOrMalformedJobIds) {
  EXPECT_EQ(wait(session_->check_background("0123abcd")).output, "no such job: 0123abcd\n");
  EXPECT_EQ(wait(session_->check_background("$(touch scratch/pwned)")).output, "no such job: $(touch scratch/pwned)");
  EXPECT_FALSE(fs::exists(root_ / "desk/scratch/pwned"));
}

TEST_F(BashSessionTest, RestartGivesAFreshTerminal) {
  run("export A=1");
  wait(session_->restart());
  EXPECT_EQ(run("echo ${A:-fresh}").output, "fresh\n");
}

// The sandboxes of this test: the host pids whose parent is this process, zombies too.
std::vector<pid_t> children_of_this_process() {
  std::vector<pid_t> children;
  for (const auto& entry : fs::directory_iterator("/proc")) {
    const std::string name = entry.path().filename();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream stat(entry.path() / "stat");
    std::string line;
    if (!std::getline(stat, line)) continue;
    const auto after_name = line.rfind(')');
    if (after_name == std::string::npos) continue;
    std::istringstream fields(line.substr(after_name + 2));
    char state = 0;
    pid_t parent = 0;
    fields >> state >> parent;
    if (parent == ::getpid()) children.push_back(std::stoi(name));
  }
  return children;
}

// A restart starts the next terminal at once, in the background: the next command finds it
// ready (no sandbox start on its critical path) and still fresh.
TEST_F(BashSessionTest, ARestartPreparesTheNextTerminal) {
  run("export A=1");
  const std::vector<pid_t> before = children_of_this_process();
  ASSERT_EQ(before.size(), 1u);
  wait(session_->restart());  // runs the loop until the prepared terminal has started
  const std::vector<pid_t> prepared = children_of_this_process();
  ASSERT_EQ(prepared.size(), 1u);
  EXPECT_NE(prepared, before);
  EXPECT_EQ(run("echo ${A:-fresh}").output, "fresh\n");
  EXPECT_EQ(children_of_this_process(), prepared) << "the command ran in the prepared terminal";
}

TEST_F(BashSessionTest, ATimeoutPreparesTheNextTerminal) {
  remake(1, maximum_characters_);
  EXPECT_FALSE(run("sleep 5").exit_status.has_value());
  const std::vector<pid_t> prepared = children_of_this_process();
  ASSERT_EQ(prepared.size(), 1u);
  EXPECT_EQ(run("echo again").output, "again\n");
  EXPECT_EQ(children_of_this_process(), prepared);
}

// The next terminal starts while the last one's sandbox is still being torn down, and its
// set-up is awaited on the event loop: it must be whole when the next command comes.
TEST_F(BashSessionTest, ATerminalPreparedAsTheLastOneEndsRunsTheNextCommand) {
  for (int round = 0; round < 40; ++round) {
    run("true");
    EXPECT_EQ(run("sleep infinity & exit 1").exit_status, 1);
    const CommandOutcome next = run("echo hi");
    ASSERT_EQ(next.output, "hi\n") << "round " << round;
  }
}

// Closing (the desk stops) or destroying the session while the next terminal starts leaves
// no sandbox behind.
void BashSessionTest::restart_until_the_next_sandbox_exists() {
  bool restarted = false;
  asio::co_spawn(
      context_,
      [&]() -> asio::awaitable<void> {
        co_await session_->restart();
        restarted = true;
      },
      asio::detached);
  context_.restart();
  while (!restarted || children_of_this_process().empty()) {
    if (context_.run_one() == 0) break;
  }
}

TEST_F(BashSessionTest, ClosingWhileTheNextTerminalStartsLeavesNoSandbox) {
  // Closed while the prepared sandbox is still setting itself up: it is killed at once, not
  // when its set-up is over.
  run("true");
  restart_until_the_next_sandbox_exists();
  ASSERT_FALSE(children_of_this_process().empty()) << "the next terminal was not being started";
  bool closed = false;
  asio::co_spawn(context_, session_->close(), [&](std::exception_ptr) { closed = true; });
  while (!closed && context_.run_one() > 0) {}
  EXPECT_TRUE(children_of_this_process().empty()) << "closing left the starting sandbox running";
  context_.run();
  EXPECT_TRUE(children_of_this_process().empty());
  EXPECT_THAT(run("echo hi").output, HasSubstr("closed"));

  remake(timeout_seconds_, maximum_characters_);
  run("true");
  asio::co_spawn(
      context_,
      [this]() -> asio::awaitable<void> {
        co_await session_->restart();
        co_await session_->close();
      },
      asio::detached);
  context_.restart();
  context_.run();
  EXPECT_TRUE(children_of_this_process().empty());
  EXPECT_THAT(run("echo hi").output, HasSubstr("closed"));

  remake(timeout_seconds_, maximum_characters_);
  run("true");
  asio::co_spawn(
      context_,
      [this]() -> asio::awaitable<void> {
        co_await session_->restart();
        session_.reset();
      },
      asio::detached);
  context_.restart();
  context_.run();
  EXPECT_TRUE(children_of_this_process().empty());

  // Destroyed (the desk's tools released) while the sandbox sets itself up.
  remake(timeout_seconds_, maximum_characters_);
  run("true");
  restart_until_the_next_sandbox_exists();
  ASSERT_FALSE(children_of_this_process().empty());
  session_.reset();
  EXPECT_TRUE(children_of_this_process().empty()) << "destroying left the starting sandbox running";
  context_.run();
}

// A sandbox that cannot start keeps saying why at each command, restarts or not.
TEST_F(BashSessionTest, ASandboxThatCannotStartSaysSoAfterARestartToo) {
  auto spec = *spec_;
  spec.working_directory = root_ / "missing";
  BashSession broken(context_.get_executor(), spec, 5, 1000);
  EXPECT_THAT(wait(broken.run("echo hi")).output, HasSubstr("could not start"));
  wait(broken.restart());
  EXPECT_TRUE(children_of_this_process().empty());
  EXPECT_THAT(wait(broken.run("echo hi")).output, HasSubstr("could not start"));
}

TEST_F(BashSessionTest, CloseIsFinal) {
  run("true");
  wait(session_->close());
  const CommandOutcome outcome = run("echo hi");
  EXPECT_FALSE(outcome.exit_status.has_value());
  EXPECT_THAT(outcome.output, HasSubstr("closed"));
}

// A /stop cancels the coroutine that runs a command: it ends at once, the command with it,
// and the next command finds a working terminal.
TEST_F(BashSessionTest, CancellationEndsTheCommandAtOnce) {
  asio::cancellation_signal stop;
  std::exception_ptr ended;
  bool finished = false;
  asio::co_spawn(context_, session_->run("sleep 30"),
                 asio::bind_cancellation_slot(stop.slot(), [&](std::exception_ptr error, CommandOutcome) {
                   ended = error;
                   finished = true;
                 }));
  asio::steady_timer later(context_, std::chrono::milliseconds(200));
  later.async_wait([&](boost::system::error_code) { stop.emit(asio::cancellation_type::terminal); });
  const auto started = std::chrono::steady_clock::now();
  context_.restart();
  context_.run();
  EXPECT_TRUE(finished);
  EXPECT_TRUE(ended != nullptr);
  EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(2));
  EXPECT_EQ(run("echo alive").output, "alive\n");
}

TEST_F(BashSessionTest, SandboxThatCannotStartIsAnOutcome) {
  auto spec = *spec_;
  spec.working_directory = root_ / "missing";
  BashSession broken(context_.get_executor(), spec, 5, 1000);
  const CommandOutcome outcome = wait(broken.run("echo hi"));
  EXPECT_FALSE(outcome.exit_status.has_value());
  EXPECT_THAT(outcome.output, HasSubstr("could not start"));
}

TEST_F(BashSessionTest, BoundedMemoryForAFlood) {
  remake(60, 1000);
  const CommandOutcome outcome = run("head -c 100000000 /dev/zero | tr '\\0' x");
  EXPECT_TRUE(outcome.truncated);
  EXPECT_LE(outcome.output.size(), 1000u);
  EXPECT_THAT(outcome.output, HasSubstr("characters left out"));
}

}  // namespace
}  // namespace deskd::tools
