#include "runner/tools/bash_session.h"

#include <algorithm>
#include <boost/asio.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <cstdio>
#include <deque>
#include <vector>

#include "base/random_id.h"
#include "runner/tools/bash_loop.h"
#include "runner/tools/bash_session_state.h"

namespace deskd::tools {

namespace asio = boost::asio;
using asio::awaitable;
using boost::system::error_code;
using namespace asio::experimental::awaitable_operators;
using namespace bash_session_detail;

namespace {

constexpr std::size_t kBackgroundLogCharacters = 4000;

// Python's "{:g}", which the seed's message uses: 120 -> "120", 0.5 -> "0.5".
std::string python_g(double value) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%g", value);
  return buffer;
}

// shlex.quote: one single-quoted word, with every ' spelled '"'"'.
std::string shell_quote(const std::string& text) {
  std::string quoted = "'";
  for (char c : text) {
    if (c == '\'')
      quoted += "'\"'\"'";
    else
      quoted += c;
  }
  return quoted + "'";
}

bool is_job_id(const std::string& text) {
  if (text.size() != 8) return false;
  for (char c : text) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

}  // namespace

// A desk that met its process or memory limit gets a fresh terminal: whatever was left
// running (a fork bomb, a hog) goes with the old one, and the model is told which limit.
std::string BashSession::State::limits_note(std::string_view printed) {
  // What the stopped terminal met (a restart records it) and what the live one has met:
  // a terminal prepared after a restart must not hide its predecessor's limit.
  // Only a limit the live terminal met stops it; a stopped one's is only told.
  sandbox::LimitHits hits = ended_hits;
  bool live_met = false;
  if (process) {
    const sandbox::LimitHits live = process->limit_hits(spec.limits.processes);
    live_met = live.process_limit > 0 || live.memory_kills > 0;
    hits.process_limit = std::max(hits.process_limit, live.process_limit);
    hits.memory_kills = std::max(hits.memory_kills, live.memory_kills);
  }
  // Without a cgroup the count of processes is a moment's look, and a bomb's processes
  // come and go; bash saying that fork failed for want of processes is the surer sign.
  if (printed.find("fork: retry: Resource temporarily unavailable") != std::string_view::npos ||
      printed.find("fork: Resource temporarily unavailable") != std::string_view::npos) {
    hits.process_limit = std::max<std::uint64_t>(hits.process_limit, 1);
    live_met = live_met || process.has_value();
  }
  std::vector<std::string> met;
  if (hits.process_limit > 0) {
    met.push_back("its process limit (" + std::to_string(spec.limits.processes) + " processes)");
  }
  if (hits.memory_kills > 0) {
    const std::string size = spec.limits.memory_bytes ? std::to_string(*spec.limits.memory_bytes >> 20) + " MiB"
                                                      : std::string("the host's memory");
    met.push_back("its memory limit (" + size + "), and the kernel killed a process");
  }
  ended_hits = {};
  if (met.empty()) return "";
  report_limits(hits);
  if (live_met) stop();
  ended_hits = {};
  std::string note = "The desk reached " + met.front();
  if (met.size() > 1) note += " and " + met.back();
  return note +
         ". Its terminal was restarted, so every process it had (background jobs too) has ended and "
         "the folder and variables are reset.";
}

// Read where limits_note reads them: after each command (and before the next), from the
// counters the session reads anyway, rather than an inotify watch of memory.events per
// desk — one read per command costs nothing more, and a limit met between commands (a
// background job's) is told with the next command, as its note is.
void BashSession::State::report_limits(const sandbox::LimitHits& hits) {
  if (!spec.refusals) return;
  if (hits.process_limit > 0) {
    spec.refusals->record(sandbox::Refusal{
        sandbox::Enforcer::limit, "pids.max " + std::to_string(spec.limits.processes),
        std::to_string(hits.process_limit) + " forks refused",
        "the desk may hold at most " + std::to_string(spec.limits.processes) + " processes", std::nullopt});
  }
  if (hits.memory_kills > 0) {
    const std::string limit = spec.limits.memory_bytes ? std::to_string(*spec.limits.memory_bytes) : "max";
    spec.refusals->record(sandbox::Refusal{sandbox::Enforcer::limit, "memory.max " + limit,
                                           std::to_string(hits.memory_kills) + " processes killed (oom_kill)",
                                           "the desk's memory limit was reached and the kernel killed a process",
                                           std::nullopt});
  }
}

awaitable<void> BashSession::State::lock() {
  if (!busy) {
    busy = true;
    co_return;
  }
  auto waiter = std::make_shared<Waiter>(executor);
  waiting.push_back(waiter);
  try {
    co_await waiter->turn.async_wait(kAwait);
  } catch (...) {
    // Cancelled before the wait began (an awaitable throws then rather than waiting): a
    // waiter left in line would be handed the lock and hold it for good.
    std::erase(waiting, waiter);
    throw;
  }
  if (!waiter->granted) {
    // The caller was cancelled (a /stop) while waiting for its turn: leave the line.
    std::erase(waiting, waiter);
    throw boost::system::system_error(asio::error::operation_aborted);
  }
}

void BashSession::State::unlock() {
  if (waiting.empty()) {
    busy = false;
    return;
  }
  auto next = std::move(waiting.front());
  waiting.pop_front();
  next->granted = true;  // the lock passes straight to it
  next->turn.cancel();
}

namespace {

// Waits until `descriptor` is readable; a null descriptor never is (until cancelled).
awaitable<std::tuple<error_code>> wait_readable(asio::posix::stream_descriptor* descriptor) {
  if (descriptor != nullptr) {
    co_return co_await descriptor->async_wait(asio::posix::descriptor_base::wait_read, kAwait);
  }
  asio::steady_timer never(co_await asio::this_coro::executor, asio::steady_timer::time_point::max());
  co_return co_await never.async_wait(kAwait);
}

}  // namespace

awaitable<CommandOutcome> BashSession::State::finish_after_death() {
  // bash is gone, so the init has ended and with it every process of the sandbox; the
  // output pipe closes once the last of them is gone. Collect what is left, briefly.
  asio::steady_timer grace(executor, std::chrono::seconds(1));
  while (drain_output()) {
    auto result = co_await (wait_readable(&*output) || grace.async_wait(kAwait));
    if (result.index() == 1) break;
  }
  std::optional<int> status;
  if (process) {
    auto waited = process->wait();
    if (waited.ok()) status = *waited;
  }
  stop();
  collector.finish();
  std::string text = collector.text();
  if (!text.empty() && text.back() != '\n') text += '\n';
  text +=
      "The terminal ended with this command, so the next command starts a fresh one; the folder and "
      "variables are reset.";
  co_return CommandOutcome{std::move(text), status, collector.truncated(), {}};
}

awaitable<CommandOutcome> BashSession::State::run_locked(const std::string& command) {
  if (closed) co_return CommandOutcome{"The terminal is closed: the desk has stopped.", std::nullopt, false, {}};
  if (command.find('\0') != std::string::npos) {
    co_return CommandOutcome{"The command contains a NUL byte, which bash cannot take.", std::nullopt, false, {}};
  }
  collector.reset();
  // 64 random bits name the command's report (bash_loop.h has the frame).
  const std::string id = random_hex(kBashLoopIdCharacters / 2);
  const std::string frame = bash_loop_frame(id, command);
  if (frame.empty()) co_return CommandOutcome{"The command is too long for the terminal.", std::nullopt, false, {}};
  // A bash that died between commands (out of memory, say) is noticed here: start afresh.
  for (int attempt = 0;; ++attempt) {
    if (!process) {
      auto started = co_await start();
      last_start_failed = !started.ok();
      if (!started.ok()) {
        if (closed) co_return CommandOutcome{"The terminal is closed: the desk has stopped.", std::nullopt, false, {}};
        co_return CommandOutcome{"The terminal could not start: " + started.error().what, std::nullopt, false,
                                 started.error().what};
      }
    }
    auto [error, written] = co_await asio::async_write(*input, asio::buffer(frame), kAwait);
    if (!error) break;
    stop();
    if (attempt == 1 || closed) {
      co_return CommandOutcome{closed ? "The terminal is closed: the desk has stopped."
                                      : "The terminal could not take the command: " + error.message() + ".",
                               std::nullopt,
                               false,
                               {}};
    }
  }

  begin_deadline();
  struct Finished {
    State& state;
    ~Finished() { state.end_deadline(); }
  } finished{*this};
  bool output_open = output && !output_ended;
  // Nothing of this command can be in the pipes before bash has read it: the first look
  // is after the first wake-up (a readiness wait sees what is already there).
  for (bool first = true;; first = false) {
    int status = 0;
    if (!first) {
      output_open = drain_output();
      const Report report = read_reports(id, status);
      if (report == Report::finished) {
        drain_output();  // everything the command wrote is in the pipe before its report
        collector.finish();
        co_return CommandOutcome{collector.text(), status, collector.truncated(), {}};
      }
      if (closed) co_return CommandOutcome{"The terminal is closed: the desk has stopped.", std::nullopt, false, {}};
      if (report == Report::ended) co_return co_await finish_after_death();
    }
    if (closed) co_return CommandOutcome{"The terminal is closed: the desk has stopped.", std::nullopt, false, {}};

    // Readiness waits only: a cancelled wait never loses data, unlike a cancelled read.
    Woken woken = Woken::deadline;
    if (std::chrono::steady_clock::now() < command_deadline) woken = co_await wait_for_event(output_open);
    if ((co_await asio::this_coro::cancellation_state).cancelled() != asio::cancellation_type::none) {
      throw boost::system::system_error(asio::error::operation_aborted);
    }
    if (woken == Woken::deadline) {
      drain_output();
      stop();
      collector.finish();
      std::string text = "The command did not finish within " + python_g(timeout_seconds) +
                         " seconds. The terminal was restarted, so the folder and variables are reset; use "
                         "bash_background for long commands.";
      const std::string printed = collector.text();
      if (!printed.empty()) text += "\n" + printed;
      co_return CommandOutcome{std::move(text), std::nullopt, collector.truncated(), {}};
    }
    if (woken == Woken::exited) {
      // The init ended (bash died, or the sandbox was killed from outside).
      drain_output();
      if (read_reports(id, status) == Report::finished) {
        collector.finish();
        co_return CommandOutcome{collector.text(), status, collector.truncated(), {}};
      }
      co_return co_await finish_after_death();
    }
  }
}

BashSession::BashSession(asio::any_io_executor executor, sandbox::SandboxSpec spec, double timeout_seconds,
                         std::size_t maximum_output_characters)
    : state_(
          std::make_shared<State>(std::move(executor), std::move(spec), timeout_seconds, maximum_output_characters)) {}

BashSession::~BashSession() {
  state_->closed = true;
  state_->stop();
  if (state_->idle_timer) state_->idle_timer->cancel();
}

double BashSession::timeout_seconds() const { return state_->timeout_seconds; }

bool BashSession::reaches_network() const { return state_->spec.network != sandbox::NetworkMode::none; }

awaitable<CommandOutcome> BashSession::run(std::string command) {
  auto state = state_;
  co_await state->lock();
  CommandOutcome outcome;
  std::exception_ptr cancelled;
  try {
    // A limit met since the last command (a fork bomb keeps forking after its command
    // returned) restarts the terminal before this one runs, in a sandbox of its own.
    const std::uint64_t refusals_before = state->spec.refusals ? state->spec.refusals->mark() : 0;
    std::string before = state->limits_note();
    // Closed for idleness since the last command: this one runs in a fresh terminal.
    if (std::string idle = state->idle_note(); !idle.empty()) before = before.empty() ? idle : before + "\n" + idle;
    outcome = co_await state->run_locked(command);
    if (!before.empty()) outcome.output = before + "\n" + outcome.output;
    if (const std::string after = state->limits_note(outcome.output); !after.empty()) {
      if (!outcome.output.empty() && outcome.output.back() != '\n') outcome.output += '\n';
      outcome.output += after;
    }
    // What the desk's enforcers refused during the command, so the model need not guess
    // why it failed (refused calls are answered only after they are recorded).
    if (state->spec.refusals) {
      state->spec.refusals->settle();
      outcome.output =
          sandbox::with_refusal_lines(std::move(outcome.output), state->spec.refusals->lines_since(refusals_before));
    }
  } catch (const boost::system::system_error& error) {
    // Cancelled (a /stop): the command may still be running, so the terminal is stopped
    // and the cancellation goes on to the caller.
    state->stop();
    if (error.code() == asio::error::operation_aborted) {
      cancelled = std::current_exception();
    } else {
      outcome = CommandOutcome{
          std::string("The terminal failed and was restarted: ") + error.what(), std::nullopt, false, {}};
    }
  } catch (const std::exception& error) {
    state->stop();
    outcome =
        CommandOutcome{std::string("The terminal failed and was restarted: ") + error.what(), std::nullopt, false, {}};
  }
  state->unlock();
  if (cancelled) std::rethrow_exception(cancelled);  // a /stop: the next turn prepares its own
  State::prepare_next(state);
  State::watch_idle(state);
  co_return outcome;
}

awaitable<BackgroundStart> BashSession::run_in_background(std::string command) {
  const std::string job_id = random_hex(4);
  const std::string folder =
      shell_quote((state_->spec.confinement.desk_directory() / "scratch" / "background-jobs").native());
  CommandOutcome start =
      co_await run("mkdir -p " + folder + " && (nohup bash -c " + shell_quote(command) + " > " + folder + "/" + job_id +
                   ".log 2>&1 & echo $! > " + folder + "/" + job_id + ".pid)");
  co_return BackgroundStart{job_id, std::move(start)};
}

awaitable<CommandOutcome> BashSession::check_background(std::string job_id) {
  if (!is_job_id(job_id)) co_return CommandOutcome{"no such job: " + job_id, 0, false, {}};
  const std::string folder =
      shell_quote((state_->spec.confinement.desk_directory() / "scratch" / "background-jobs").native());
  co_return co_await run("if [ ! -f " + folder + "/" + job_id + ".pid ]; then echo \"no such job: " + job_id +
                         "\"; else\n  if kill -0 \"$(cat " + folder + "/" + job_id +
                         ".pid)\" 2>/dev/null; then echo running; else echo finished; fi\n  tail -c " +
                         std::to_string(kBackgroundLogCharacters) + " " + folder + "/" + job_id + ".log\nfi");
}

awaitable<void> BashSession::restart() {
  auto state = state_;
  co_await state->lock();
  state->stop();
  state->closed_for_idle = false;  // the model asked for the fresh terminal: nothing to tell
  state->unlock();
  State::prepare_next(state);
}

void BashSession::prepare() { State::prepare_next(state_); }

awaitable<void> BashSession::close() {
  // Not behind the lock: a running command is ended at once, and reports "closed".
  state_->closed = true;
  state_->stop();
  if (state_->idle_timer) state_->idle_timer->cancel();
  co_return;
}

}  // namespace deskd::tools
