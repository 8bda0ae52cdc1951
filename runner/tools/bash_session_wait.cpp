// How a running command waits: one readiness wait per source it needs, completed by
// callbacks rather than a coroutine per source (awaitable operators start one for each,
// allocate its frame and cancel the losers on every wake-up, which the warm round trip paid
// on every command). The init's end is seen on the report pipe: bash is the init's only
// child, and when it ends the init and every process of the sandbox's pid namespace end,
// so the pipe's last writer is gone and it reads as ended; no pidfd wait per command.
// Nothing stays pending between commands, so an io_context with no other work returns.

#include <boost/asio.hpp>
#include <boost/asio/any_completion_handler.hpp>

#include "runner/tools/bash_session_state.h"

namespace deskd::tools {

namespace asio = boost::asio;
using boost::system::error_code;

struct BashSession::State::PendingWait {
  std::optional<asio::any_completion_handler<void(Woken)>> handler;
};

asio::awaitable<BashSession::State::Woken> BashSession::State::wait_for_event(bool watch_output) {
  auto wait = std::make_shared<PendingWait>();
  co_return co_await asio::async_initiate<decltype(asio::use_awaitable), void(Woken)>(
      [this, wait, watch_output](auto handler) {
        wait->handler.emplace(std::move(handler));
        start_wait(wait, watch_output);
      },
      asio::use_awaitable);
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
