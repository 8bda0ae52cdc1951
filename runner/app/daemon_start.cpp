// Daemon's start: every desk assembled on two threads beside the event loop, what is sent
// to a desk meanwhile held for it, and STATUS= for the service manager. See daemon.h.

#include <boost/asio.hpp>

#include <algorithm>

#include "runner/app/daemon.h"
#include "runner/app/daemon_slot.h"
#include "runner/app/desk_assembly.h"
#include "runner/app/service_status.h"
#include "runner/desk/desk_runtime.h"
#include "runner/desk/journal_tail.h"
#include "runner/desk/schedule.h"

namespace deskd::app {

namespace asio = boost::asio;

void Daemon::start(std::function<void(std::size_t started)> started) {
  // Ids go on from the journals' last one, so "events after e-22" means the same after a
  // restart, and their last events are history again. One more than the history keeps, so
  // that it knows when older ones are missing.
  const desk::PastEvents past =
      desk::read_recent_events(desk::journals_under(config_.runner.state_folder / "desks"), 10001);
  bus_.continue_numbering_after(past.highest_event_number);
  for (const desk::Event& event : past.events) history_.add(event);
  // Starting from here on, so that what the socket answers from now says so.
  for (auto& [name, slot] : slots_) begin_starting(*slot);
  // Waits for the count, not for these slots: a reload right after the last desk came back
  // may already have replaced some of them.
  asio::co_spawn(
      executor_,
      [this]() -> asio::awaitable<std::size_t> {
        asio::steady_timer timer(executor_);
        while (starting_ > 0) {
          timer.expires_after(std::chrono::milliseconds(5));
          co_await timer.async_wait(asio::as_tuple(asio::use_awaitable));
        }
        std::size_t running = 0;
        for (const auto& [name, slot] : slots_) running += slot->desk_running ? 1 : 0;
        co_return running;
      },
      [started = std::move(started)](std::exception_ptr escaped, std::size_t running) {
        if (escaped) std::rethrow_exception(escaped);
        started(running);
      });
}

std::string Daemon::status_line() const {
  std::size_t running = 0;
  std::vector<StoppedDesk> stopped;
  for (const auto& [name, slot] : slots_) {
    if (slot->desk_running) {
      ++running;
    } else if (!slot->starting) {
      stopped.push_back({name, slot->error});
    }
  }
  return service_status_line(running, slots_.size(), starting_, stopped);
}

asio::awaitable<void> Daemon::start_slots(std::vector<Slot*> slots) {
  for (Slot* slot : slots) begin_starting(*slot);
  co_await wait_until_started(std::move(slots));
}

asio::awaitable<void> Daemon::wait_until_started(std::vector<Slot*> slots) {
  asio::steady_timer timer(executor_);
  const auto any_starting = [&] {
    return std::any_of(slots.begin(), slots.end(), [](const Slot* slot) { return slot->starting; });
  };
  while (any_starting()) {
    timer.expires_after(std::chrono::milliseconds(5));
    co_await timer.async_wait(asio::as_tuple(asio::use_awaitable));
  }
}

void Daemon::begin_starting(Slot& slot) {
  slot.error.clear();
  slot.starting = true;
  ++starting_;
  if (!assembly_threads_) {
    // Two threads, whatever the cores: each desk's first sandboxed `true` is a clone of all
    // of deskd, and every clone write-protects deskd's memory; threads writing to it on other
    // cores then fault and shoot down each other's TLBs. Measured with 300 script desks on 2
    // cores: 1 thread 7.8 s, 2 threads 8.7 s, 4 threads 10.8 s, 8 threads 11.0 s. Two, so that
    // a desk whose quota image is being made (seconds) does not hold up every other desk.
    assembly_threads_ = std::make_unique<asio::thread_pool>(2);
  }
  asio::post(*assembly_threads_, [this, &slot] {
    auto assembled = std::make_shared<Result<std::unique_ptr<AssembledDesk>>>(
        Error::make(ErrorCode::refused, "deskd began to stop before the desk had started."));
    try {
      // Once deskd stops, the desks still waiting here are not built only to be taken down.
      if (!abandon_starting_) *assembled = assemble_desk(executor_, config_, slot.config, bus_, clock_);
    } catch (const std::exception& error) {
      *assembled = Error::make(ErrorCode::internal, std::string("assembling the desk failed: ") + error.what());
    } catch (...) {
      *assembled = Error::make(ErrorCode::internal, "assembling the desk failed with an unknown exception");
    }
    asio::post(executor_, [this, &slot, assembled] { finish_starting(slot, std::move(*assembled)); });
  });
}

void Daemon::finish_starting(Slot& slot, Result<std::unique_ptr<AssembledDesk>> assembled) {
  slot.starting = false;
  --starting_;
  const std::string& name = slot.config.name;
  if (assembled.ok() && stopping_) {
    assembled = Error::make(ErrorCode::refused, "deskd began to stop before the desk had started.");
  }
  if (!assembled.ok()) {
    slot.error = assembled.error().what;
    log_.error("desk " + name + " is kept stopped: " + slot.error);
    std::error_code ignored;
    std::filesystem::create_directories(desk_state_folder(config_, name), ignored);
    if (auto journal = desk::Journal::open(desk_state_folder(config_, name) / "journal.jsonl"); journal.ok()) {
      slot.failure_journal.emplace(std::move(journal).value());
    }
    bus_.publish(name, desk::event_kind::kDeskFailed, {{"error", slot.error}});
    release_held(slot, Error::make(ErrorCode::refused, "Desk '" + name + "' could not start: " + slot.error));
    return;
  }
  slot.failure_journal.reset();
  slot.desk = std::move(assembled).value();
  spawn_desk_part(slot.desk->runtime->run(), slot.stop_desk, slot.desk_running, "desk " + name);
  spawn_desk_part(slot.desk->scheduler->run(), slot.stop_scheduler, slot.scheduler_running,
                  "the schedules of desk " + name);
  log_.info("desk " + name + " started (" + slot.desk->model_description + ", " + slot.config.mode + ", " +
            std::to_string(slot.config.schedules.size()) + " schedules)");
  release_held(slot, std::nullopt);
}

void Daemon::release_held(Slot& slot, const std::optional<Error>& refusal) {
  std::vector<Slot::HeldSend> held;
  {
    const std::lock_guard lock(waiting_mutex_);
    held.swap(slot.held);
    slot.held_bytes = 0;
  }
  for (auto& each : held) {
    if (refusal) {
      each.sent(*refusal);
    } else {
      send(slot.config.name, each.text, each.sender, std::move(each.sent));
    }
  }
}

void Daemon::spawn_desk_part(asio::awaitable<void> part, asio::cancellation_signal& stop, bool& running,
                             std::string what) {
  running = true;
  asio::co_spawn(executor_, std::move(part),
                 asio::bind_cancellation_slot(stop.slot(), [this, &running, what = std::move(what)](std::exception_ptr escaped) {
                   running = false;
                   if (!escaped) return;
                   try {
                     std::rethrow_exception(escaped);
                   } catch (const std::exception& error) {
                     log_.error(what + " ended: " + error.what());
                   }
                 }));
}

void Daemon::hold(Slot& slot, const std::string& text, const std::string& sender,
                  std::function<void(Result<std::string>)> sent) {
  std::optional<Error> full;
  {
    const std::lock_guard lock(waiting_mutex_);
    full = refuse_if_full(slot, text.size() + kHeldMessageOverhead);
    if (!full) {
      slot.held.push_back({text, sender, std::move(sent)});
      slot.held_bytes += text.size() + kHeldMessageOverhead;
      return;
    }
  }
  sent(std::move(*full));  // not under the lock: answering may publish, and the sinks take it
}

}  // namespace deskd::app
