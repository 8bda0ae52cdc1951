#include <cstdio>

#include "runner/tools/bash_session_state.h"

// Closing a desk's terminal (and its file opener) that nobody used for a while: an idle
// desk then holds no sandbox at all, and its next command starts a fresh terminal and is
// told so, as after a timeout or a restart.

namespace deskd::tools {

namespace asio = boost::asio;
using asio::awaitable;
using namespace bash_session_detail;

namespace {

// 30 -> "30 minutes", 1 -> "1 minute", 0.5 -> "0.5 minutes" (the config's own number).
std::string idle_minutes_text(std::chrono::milliseconds idle) {
  const double minutes = static_cast<double>(idle.count()) / 60000.0;
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%g minute%s", minutes, minutes == 1.0 ? "" : "s");
  return buffer;
}

}  // namespace

// Waits until `last_used + idle_limit`, and looks again after any use meanwhile.
awaitable<void> BashSession::State::watch_until_idle_closed(std::shared_ptr<State> self) {
  for (;;) {
    self->idle_timer->expires_at(self->last_used + self->idle_limit);
    auto [error] = co_await self->idle_timer->async_wait(kAwait);
    if (error || self->closed) co_return;  // cancelled: the session closed
    const auto now = std::chrono::steady_clock::now();
    if (now < self->last_used + self->idle_limit) continue;  // used meanwhile
    // A command or a start under way is no idleness; its end notes a use. Neither is a
    // terminal whose background jobs still run (when idle, the init's only children are
    // bash and, behind the egress proxy, its forwarder): closing it would end them, which
    // only a timeout, a limit or a restart may.
    const std::uint64_t idle_processes = self->spec.network == sandbox::NetworkMode::allowlist ? 2 : 1;
    if (self->busy || (self->process && self->process->processes_below_init() > idle_processes)) {
      self->last_used = now;
      continue;
    }
    if (self->process) {
      self->stop();
      self->closed_for_idle = true;
    }
    if (!self->idle_companion) co_return;
    const auto companion_used = self->idle_companion(self->idle_limit);
    if (!companion_used) co_return;
    self->last_used = *companion_used;  // the file opener is still in use: look again later
  }
}

void BashSession::close_when_idle(std::chrono::milliseconds idle, IdleCompanion companion) {
  state_->idle_limit = idle;
  state_->idle_companion = std::move(companion);
}

void BashSession::State::watch_idle(const std::shared_ptr<State>& self) {
  if (self->idle_limit.count() <= 0 || self->closed) return;
  self->last_used = std::chrono::steady_clock::now();
  if (self->idle_timer) return;  // a watch runs, and reads last_used when it wakes
  self->idle_timer.emplace(self->executor);
  asio::co_spawn(
      self->executor,
      // Detached, for it cannot throw: every exception is caught below. close() and the
      // destructor cancel its timer, so it never outlives the session by a wait.
      [self]() -> awaitable<void> {
        try {
          co_await watch_until_idle_closed(self);
        } catch (...) {
          // A terminal that could not be looked at stays open: nothing is lost but memory.
        }
        self->idle_timer.reset();
      },
      asio::detached);
}

std::string BashSession::State::idle_note() {
  if (!closed_for_idle) return "";
  closed_for_idle = false;
  return "The terminal had not been used for " + idle_minutes_text(idle_limit) +
         " and was closed to free its memory, so this command ran in a fresh one: the folder and variables "
         "are reset, and it starts in the desk folder.";
}

}  // namespace deskd::tools
