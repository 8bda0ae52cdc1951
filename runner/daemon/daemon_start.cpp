// Daemon's start: every desk assembled on two threads beside the event loop, what is sent
// to a desk meanwhile held for it, and STATUS= for the service manager. See daemon.h.

#include <unistd.h>

#include <boost/asio.hpp>

#include <algorithm>

#include "base/asio_await.h"
#include "runner/daemon/daemon.h"
#include "runner/daemon/daemon_slot.h"
#include "runner/daemon/desk_assembly.h"
#include "runner/daemon/service_status.h"
#include "runner/desk/desk_runtime.h"
#include "runner/desk/landlock_audit_reader.h"
#include "runner/desk/schedule.h"
#include "runner/journal/journal_tail.h"
#include "sandbox/landlock_audit.h"

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
  std::vector<Slot*> every_slot;
  for (auto& [name, slot] : slots_) every_slot.push_back(slot.get());
  start_landlock_audit();
  begin_starting(std::move(every_slot));
  // Waits for the count, not for these slots: a reload right after the last desk came back
  // may already have replaced some of them.
  asio::co_spawn(
      executor_,
      [this]() -> asio::awaitable<std::size_t> {
        while (starting_ > 0) (void)co_await desk_came_back_.async_wait(kAwait);
        std::size_t running = 0;
        for (const auto& [name, slot] : slots_) running += slot->desk_running ? 1 : 0;
        co_return running;
      },
      [started = std::move(started)](std::exception_ptr escaped, std::size_t running) {
        if (escaped) std::rethrow_exception(escaped);
        started(running);
      });
}

// Landlock tells its refusals only to the kernel's audit, which only a root deskd may read;
// the desks run the same without it, only those refusals go unreported.
void Daemon::start_landlock_audit() {
  if (::geteuid() != 0 || landlock_audit_) return;
  auto reader = desk::LandlockAuditReader::start(executor_);
  if (!reader.ok()) {
    log_.info(reader.error().what);
    return;
  }
  landlock_audit_ = std::move(reader).value();
  if (auto enabled = sandbox::kernel_audit_enabled(); enabled.ok() && !*enabled) {
    log_.warn(
        "Landlock refusals are reported only while the kernel's audit is on, and it is off: turn it on with "
        "`auditctl -e 1` (or boot with audit=1) to see them");
  }
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
  begin_starting(slots);
  co_await wait_until_started(std::move(slots));
}

asio::awaitable<void> Daemon::wait_until_started(std::vector<Slot*> slots) {
  const auto any_starting = [&] {
    return std::any_of(slots.begin(), slots.end(), [](const Slot* slot) { return slot->starting; });
  };
  while (any_starting()) (void)co_await desk_came_back_.async_wait(kAwait);
}

void Daemon::begin_starting(std::vector<Slot*> slots) {
  if (slots.empty()) return;
  std::vector<DeskToIdentify> desks;
  desks.reserve(slots.size());
  for (Slot* slot : slots) {
    slot->error.clear();
    slot->starting = true;
    ++starting_;
    desks.push_back(DeskToIdentify{slot->config.name, slot->config.directory});
  }
  if (!assembly_threads_) {
    // Two threads, whatever the cores: each desk's first sandboxed `true` is a clone of all
    // of deskd, and every clone write-protects deskd's memory; threads writing to it on other
    // cores then fault and shoot down each other's TLBs. Measured with 300 script desks on 2
    // cores: 1 thread 7.8 s, 2 threads 8.7 s, 4 threads 10.8 s, 8 threads 11.0 s. Two, so that
    // a desk whose quota image is being made (seconds) does not hold up every other desk.
    assembly_threads_ = std::make_unique<asio::thread_pool>(2);
  }
  asio::post(*assembly_threads_, [this, slots = std::move(slots), desks = std::move(desks)] {
    // The ids of all these desks first, in one go: one desk at a time, each locked the host's
    // uid register and read it and the desk-ids file whole (N² for N desks), and wrote both
    // durably for each new desk.
    auto ids = choose_desk_ids(desks);
    for (Slot* slot : slots) {
      auto found = ids.find(slot->config.name);
      Result<std::optional<DeskIds>> desk_ids =
          found != ids.end() ? std::move(found->second)
                             : Error::make(ErrorCode::internal, "No id was chosen for desk '" + slot->config.name + "'.");
      asio::post(*assembly_threads_,
                 [this, slot, desk_ids = std::move(desk_ids)]() mutable { assemble_slot(*slot, std::move(desk_ids)); });
    }
  });
}

std::map<std::string, Result<std::optional<DeskIds>>> Daemon::choose_desk_ids(
    const std::vector<DeskToIdentify>& desks) const {
  std::map<std::string, Result<std::optional<DeskIds>>> ids;
  const auto every_desk_fails = [&](const Error& error) {
    for (const auto& desk : desks) ids.insert_or_assign(desk.name, error);
  };
  // An unprivileged deskd's desks run as its own uid; and once deskd stops, the desks still
  // waiting are not begun (assemble_slot says so), so their ids are not chosen either.
  if (::geteuid() != 0 || abandon_starting_) {
    for (const auto& desk : desks) ids.insert_or_assign(desk.name, std::optional<DeskIds>());
    return ids;
  }
  try {
    auto chosen = desk_ids_for_desks(config_, desks);
    if (!chosen.ok()) {
      every_desk_fails(chosen.error());
      return ids;
    }
    for (auto& [name, desk_ids] : *chosen) {
      if (desk_ids.ok()) {
        ids.insert_or_assign(name, std::optional<DeskIds>(*desk_ids));
      } else {
        ids.insert_or_assign(name, std::move(desk_ids).error());
      }
    }
  } catch (const std::exception& error) {
    every_desk_fails(Error::make(ErrorCode::internal, std::string("an exception: ") + error.what()));
  } catch (...) {
    every_desk_fails(Error::make(ErrorCode::internal, "an unknown exception"));
  }
  return ids;
}

void Daemon::assemble_slot(Slot& slot, Result<std::optional<DeskIds>> ids) {
  auto assembled = std::make_shared<Result<std::unique_ptr<AssembledDesk>>>(
      Error::make(ErrorCode::refused, "deskd began to stop before the desk had started."));
  try {
    // Once deskd stops, the desks still waiting here are not built only to be taken down.
    if (abandon_starting_) {
      // assembled says so already
    } else if (!ids.ok()) {
      const Error& error = ids.error();
      *assembled = Error{error.code, error.error_number, "choosing the desk's uid: " + error.what};
    } else {
      *assembled = assemble_desk(executor_,
                                 {.desk = slot.config,
                                  .state_folder = desk_state_folder(config_, slot.config.name),
                                  .ids = *ids,
                                  .landlock_audit = landlock_audit_,
                                  .measures = desk_measures(slot.config.name)},
                                 bus_, clock_);
    }
  } catch (const std::exception& error) {
    *assembled = Error::make(ErrorCode::internal, std::string("assembling the desk failed: ") + error.what());
  } catch (...) {
    *assembled = Error::make(ErrorCode::internal, "assembling the desk failed with an unknown exception");
  }
  asio::post(executor_, [this, &slot, assembled] { finish_starting(slot, std::move(*assembled)); });
}

void Daemon::finish_starting(Slot& slot, Result<std::unique_ptr<AssembledDesk>> assembled) {
  slot.starting = false;
  --starting_;
  desk_came_back_.cancel();  // what waits for starting desks looks again
  const std::string& name = slot.config.name;
  if (assembled.ok() && stopping_) {
    assembled = Error::make(ErrorCode::refused, "deskd began to stop before the desk had started.");
  }
  if (!assembled.ok()) {
    slot.error = assembled.error().what;
    log_.error("desk " + name + " is kept stopped: " + slot.error, about_desk(name));
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
  metrics_.know_desk_tools(name, slot.desk->tool_names);
  spawn_desk_part(slot.desk->runtime->run(), slot.runtime_part, slot.desk_running);
  spawn_desk_part(slot.desk->scheduler->run(), slot.scheduler_part, slot.scheduler_running);
  log_.info("desk " + name + " started (" + slot.desk->model_description + ", " + slot.config.mode + ", " +
                std::to_string(slot.config.schedules.size()) + " schedules)",
            about_desk(name));
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

void Daemon::spawn_desk_part(asio::awaitable<void> part, TaskGroup& group, bool& running) {
  running = true;
  group.spawn([](asio::awaitable<void> part_in, bool& running_in) -> asio::awaitable<void> {
    // Not running from the moment it ends, thrown or not (the group reports what it threw).
    struct EndsRunning {
      bool& running;
      ~EndsRunning() { running = false; }
    } ends_running{running_in};
    co_await std::move(part_in);
  }(std::move(part), running));
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
