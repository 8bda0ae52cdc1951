#include <fcntl.h>
#include <unistd.h>

#include <boost/asio/experimental/awaitable_operators.hpp>
#include <vector>

#include "runner/tools/bash_loop.h"
#include "runner/tools/bash_session_state.h"

// Starting and stopping the sandboxed bash behind a BashSession: its pipes, the sandbox's
// set-up off the event loop, and the terminal prepared in the background after a restart.

namespace deskd::tools {

namespace asio = boost::asio;
using asio::awaitable;
using boost::system::error_code;
using namespace asio::experimental::awaitable_operators;
using namespace bash_session_detail;

awaitable<Result<void>> BashSession::State::start() {
  int input_pipe[2], output_pipe[2], report_pipe[2];
  if (::pipe2(input_pipe, O_CLOEXEC) != 0)
    co_return Error::from_errno(errno, "Creating the terminal's input pipe failed");
  UniqueFd input_read(input_pipe[0]), input_write(input_pipe[1]);
  if (::pipe2(output_pipe, O_CLOEXEC) != 0)
    co_return Error::from_errno(errno, "Creating the terminal's output pipe failed");
  UniqueFd output_read(output_pipe[0]), output_write(output_pipe[1]);
  (void)::fcntl(output_read.get(), F_SETPIPE_SZ, kOutputPipeBytes);
  // Not zeroed (make_unique<char[]> would memset 256 KiB, a page fault per 4 KiB, on every
  // fresh terminal): reads fill it, and only what a read returned is ever looked at.
  if (!output_buffer) output_buffer = std::make_unique_for_overwrite<char[]>(kOutputReadBytes);
  if (::pipe2(report_pipe, O_CLOEXEC) != 0)
    co_return Error::from_errno(errno, "Creating the terminal's report pipe failed");
  UniqueFd report_read(report_pipe[0]), report_write(report_pipe[1]);

  // The loop's layout (bash_loop.h): /dev/null, the output twice, the reports, the commands.
  UniqueFd null_device(::open("/dev/null", O_RDWR | O_CLOEXEC));
  if (!null_device) co_return Error::from_errno(errno, "Opening /dev/null for the terminal failed");
  sandbox::StandardStreams streams{
      null_device.get(), output_write.get(), output_write.get(), {report_write.get(), input_read.get()}};
  const std::vector<std::string> command = {"/bin/bash", "--noprofile", "--norc", "-c", std::string(kBashLoopScript)};
  auto started = sandbox::start_sandboxed(spec, command, streams);
  if (!started.ok()) co_return std::move(started).error();
  starting.emplace(std::move(started).value());
  input_read.reset();  // the sandbox holds its own ends now
  null_device.reset();
  output_write.reset();
  report_write.reset();
  // The sandbox sets itself up (mounts, seccomp, the init, bash's exec) while the event
  // loop serves the other desks: only the clone and the identity maps were synchronous.
  // A wake-up is checked (the reactor may wake a descriptor spuriously); finish() waits
  // itself if the dup cannot be had. A set-up that hangs (a mount on a hung file system)
  // is given up after kSetUpSeconds rather than holding the session's lock for good.
  if (UniqueFd report(::fcntl(starting->report_fd(), F_DUPFD_CLOEXEC, 0)); report) {
    asio::posix::stream_descriptor set_up(executor);
    error_code assigned;
    set_up.assign(report.get(), assigned);
    if (!assigned) {
      (void)report.release();
      asio::steady_timer give_up(executor, std::chrono::seconds(kSetUpSeconds));
      while (starting && !starting->set_up_over()) {
        auto woken =
            co_await (set_up.async_wait(asio::posix::descriptor_base::wait_read, kAwait) || give_up.async_wait(kAwait));
        if ((co_await asio::this_coro::cancellation_state).cancelled() != asio::cancellation_type::none) {
          starting.reset();  // kills and reaps the sandbox
          throw boost::system::system_error(asio::error::operation_aborted);
        }
        if (woken.index() == 1) {
          starting.reset();
          co_return Error::make(ErrorCode::system, "Its sandbox did not finish setting itself up within " +
                                                       std::to_string(kSetUpSeconds) + " seconds.");
        }
        if (std::get<0>(std::get<0>(woken))) break;  // finish() waits by itself
      }
    }
  }
  // stop() (the desk closed, or the session went away) dropped it meanwhile: killed.
  if (!starting) co_return Error::make(ErrorCode::refused, "The terminal is closed: the desk has stopped.");
  auto launched = std::move(*starting).finish();
  starting.reset();
  if (!launched.ok()) co_return std::move(launched).error();
  if (closed) co_return Error::make(ErrorCode::refused, "The terminal is closed: the desk has stopped.");
  process.emplace(std::move(launched).value());
  input.emplace(executor, input_write.release());
  output.emplace(executor, output_read.release());
  reports.emplace(executor, report_read.release());
  input->non_blocking(true);
  output->non_blocking(true);
  reports->non_blocking(true);
  report_buffer.clear();
  output_ended = false;
  co_return success();
}

void BashSession::State::prepare_next(const std::shared_ptr<State>& self) {
  if (self->closed || self->process || self->preparing || self->last_start_failed) return;
  self->preparing = true;
  asio::co_spawn(
      self->executor,
      // Detached, for it cannot throw: every exception is caught below. Nothing waits for
      // it; a command that comes meanwhile waits for the lock it holds.
      [self]() -> awaitable<void> {
        try {
          co_await self->lock();
        } catch (...) {
          self->preparing = false;  // the session closed first: nothing to prepare
          co_return;
        }
        try {
          if (!self->process && !self->closed) {
            // A failure is not reported here: the next command starts its own terminal
            // and says why that failed.
            auto started = co_await self->start();
            self->last_start_failed = !started.ok();
          }
        } catch (...) {
          self->stop();
          self->last_start_failed = true;
        }
        self->preparing = false;
        self->unlock();
        // A terminal prepared for a turn that never uses it is idle from now on.
        State::watch_idle(self);
      },
      asio::detached);
}

void BashSession::State::stop() {
  starting.reset();  // a sandbox still setting itself up is killed and reaped
  if (process) {
    ended_hits = process->limit_hits(spec.limits.processes);
    process->close();  // kills every process of the sandbox, background jobs too
    const sandbox::LimitHits last = process->limit_hits(spec.limits.processes);  // a cgroup's final counts
    ended_hits.process_limit = std::max(ended_hits.process_limit, last.process_limit);
    ended_hits.memory_kills = std::max(ended_hits.memory_kills, last.memory_kills);
  }
  process.reset();
  input.reset();
  output.reset();
  reports.reset();
  report_buffer.clear();
}

}  // namespace deskd::tools
