// Reading what a command printed and its report, and how a running command waits: one readiness wait per source it needs, completed by
// callbacks rather than a coroutine per source (awaitable operators start one for each,
// allocate its frame and cancel the losers on every wake-up, which the warm round trip paid
// on every command). The init's end is seen on the report pipe: bash is the init's only
// child, and when it ends the init and every process of the sandbox's pid namespace end,
// so the pipe's last writer is gone and it reads as ended; no pidfd wait per command.
// Nothing stays pending between commands, so an io_context with no other work returns.

#include <boost/asio.hpp>
#include <boost/asio/any_completion_handler.hpp>

#include "runner/tools/bash_loop.h"
#include "runner/tools/bash_session_state.h"

namespace deskd::tools {

namespace asio = boost::asio;
using boost::system::error_code;

namespace {
// What is kept of the report pipe's text while no report of ours is in it: enough for the
// start of one ("<id> <status>\n", at most 22 bytes).
constexpr std::size_t kReportTailBytes = 64;
}  // namespace

// Reads what is waiting in the output pipe without blocking; false once it has ended.
bool BashSession::State::drain_output() {
  if (!output || output_ended) return false;
  char* const buffer = output_buffer.get();
  for (;;) {
    error_code error;
    const std::size_t count = output->read_some(asio::buffer(buffer, bash_session_detail::kOutputReadBytes), error);
    if (error == asio::error::would_block || error == asio::error::try_again) return true;
    if (error || count == 0) {
      output_ended = true;
      return false;
    }
    collector.append({buffer, count});
  }
}

BashSession::State::Report BashSession::State::read_reports(const std::string& id, int& status) {
  if (!reports) return Report::ended;
  char buffer[4096];
  bool ended = false;
  for (;;) {
    error_code error;
    const std::size_t count = reports->read_some(asio::buffer(buffer), error);
    if (error == asio::error::would_block || error == asio::error::try_again) break;
    if (error || count == 0) {
      ended = true;
      break;
    }
    report_buffer.append(buffer, count);
    // A report for an earlier command (one that timed out cannot report: its bash is gone)
    // or a DEBUG trap's output is not ours: it is dropped, but for a tail that may hold the
    // start of our report, so the buffer stays small whatever a trap prints.
    if (const BashLoopReport report = find_bash_loop_report(report_buffer, id); report.end != std::string::npos) {
      status = report.status;
      report_buffer.erase(0, report.end);
      return Report::finished;
    }
    if (report_buffer.size() > kReportTailBytes) report_buffer.erase(0, report_buffer.size() - kReportTailBytes);
  }
  if (const BashLoopReport report = find_bash_loop_report(report_buffer, id); report.end != std::string::npos) {
    status = report.status;
    report_buffer.erase(0, report.end);
    return Report::finished;
  }
  return ended ? Report::ended : Report::none;
}

struct BashSession::State::PendingWait {
  std::optional<asio::any_completion_handler<void(Woken)>> handler;
};

asio::awaitable<BashSession::State::Woken> BashSession::State::wait_for_event(bool watch_output) {
  auto wait = std::make_shared<PendingWait>();
  // The initiation is a named local holding only a reference: GCC 12 may destroy a
  // temporary of a co_await expression twice, and a shared_ptr captured in one was released
  // twice (freed while a cancelled readiness wait still held it; ASan saw it).
  const auto initiation = [this, &wait, watch_output](auto handler) {
    wait->handler.emplace(std::move(handler));
    start_wait(wait, watch_output);
  };
  co_return co_await asio::async_initiate<decltype(asio::use_awaitable), void(Woken)>(initiation, asio::use_awaitable);
}

void BashSession::State::start_wait(std::shared_ptr<PendingWait> wait, bool watch_output) {
  pending_wait = wait;
  auto slot = asio::get_associated_cancellation_slot(*wait->handler);
  if (slot.is_connected()) {
    slot.assign([weak = weak_from_this(), wait](asio::cancellation_type) {
      // Not completed from inside the canceller's call: posted, as asio's own waits do.
      auto self = weak.lock();
      if (!self || self->pending_wait != wait) return;
      asio::post(self->executor, [self, wait] {
        if (self->pending_wait == wait) self->finish_wait(Woken::cancelled);
      });
    });
  }
  if (!reports) {
    asio::post(executor, [self = shared_from_this(), wait] {
      if (self->pending_wait == wait) self->finish_wait(Woken::exited);
    });
    return;
  }
  const auto on_ready = [weak = weak_from_this(), wait](Woken woken) {
    return [weak, wait, woken](error_code error) {
      auto self = weak.lock();
      if (error || !self || self->pending_wait != wait) return;  // a wait that lost, or was stopped
      self->finish_wait(woken);
    };
  };
  if (watch_output && output) output->async_wait(asio::posix::descriptor_base::wait_read, on_ready(Woken::output));
  reports->async_wait(asio::posix::descriptor_base::wait_read, on_ready(Woken::reports));
}

void BashSession::State::finish_wait(Woken woken) {
  auto wait = std::move(pending_wait);
  pending_wait.reset();
  if (!wait || !wait->handler) return;
  auto handler = std::move(*wait->handler);
  wait->handler.reset();
  asio::get_associated_cancellation_slot(handler).clear();
  // The other readiness waits end now (a reactor's cancel is no system call), so that
  // nothing of this session stays pending between commands.
  if (output) output->cancel();
  if (reports) reports->cancel();
  std::move(handler)(woken);
}

void BashSession::State::begin_deadline() {
  command_deadline = std::chrono::steady_clock::now() + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                                            std::chrono::duration<double>(timeout_seconds));
  deadline_timer.expires_at(command_deadline);
  deadline_timer.async_wait([weak = weak_from_this()](error_code error) {
    auto self = weak.lock();
    if (error || !self) return;  // the command ended first, or the session went away
    if (self->pending_wait) self->finish_wait(Woken::deadline);
  });
}

void BashSession::State::end_deadline() { deadline_timer.cancel(); }

}  // namespace deskd::tools
