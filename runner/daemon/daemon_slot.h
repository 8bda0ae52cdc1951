#pragma once
// What the daemon holds for one desk of its config; shared by daemon.cpp and
// daemon_reload.cpp, and by nothing else.

#include <boost/asio/any_io_executor.hpp>

#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/task_group.h"
#include "runner/daemon/daemon.h"
#include "runner/daemon/desk_assembly.h"
#include "runner/journal/journal.h"

namespace deskd::app {

struct Daemon::Slot {
  Slot(const boost::asio::any_io_executor& executor, DeskConfig config_in, TaskGroup::ReportEscaped report_runtime,
       TaskGroup::ReportEscaped report_schedules)
      : config(std::move(config_in)),
        runtime_part(executor, std::move(report_runtime)),
        scheduler_part(executor, std::move(report_schedules)) {}

  DeskConfig config;
  std::string error;  // why the desk is stopped, when it could not start
  std::unique_ptr<AssembledDesk> desk;
  std::optional<desk::Journal> failure_journal;  // a desk that could not start still records why
  // The desk's two parts, each a group of one: its schedules are cancelled first, its
  // runtime after the grace for a running turn; stop_slots waits for both.
  TaskGroup runtime_part;
  TaskGroup scheduler_part;
  bool desk_running = false;
  bool scheduler_running = false;
  // Being assembled off the event loop (Daemon::begin_starting): its config is read there,
  // so neither a reload nor stop() touches the slot until it is back.
  bool starting = false;
  // Messages sent while the desk was starting: handed to it once it runs, refused if it
  // cannot start. Their bytes count against the same limit as the waiting ones.
  struct HeldSend {
    std::string text, sender;
    std::function<void(Result<std::string>)> sent;
  };
  std::vector<HeldSend> held;
  std::size_t held_bytes = 0;
  // Messages sent through the socket that the desk has not yet taken, by trigger id, and
  // their total; under the Daemon's waiting_mutex_.
  std::map<std::string, std::size_t> waiting;
  std::size_t waiting_bytes = 0;
};

/// What a reload will do: the new config, and the desks it starts, stops, restarts, keeps.
struct Daemon::ReloadPlan {
  Config next;
  std::vector<std::string> stopped, restarted, kept;
  std::vector<Slot*> to_stop;  ///< the stopped and the restarted
  std::vector<Slot*> to_start;  ///< the new and the restarted, once the config is applied
};

/// The error of an operation on a desk the daemon does not have.
inline Error unknown_desk(const std::string& name) {
  return Error::make(ErrorCode::not_found, "There is no desk '" + name + "'.");
}

}  // namespace deskd::app
