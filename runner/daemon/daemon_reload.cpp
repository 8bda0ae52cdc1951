// Daemon::reload: the config file read again, and the desks made to match it. What can
// be judged before anything changes is judged first (the file's problems, a changed
// [runner]), so a refused reload leaves every desk as it was.

#include <boost/asio.hpp>

#include <algorithm>
#include <map>

#include "base/asio_await.h"
#include "runner/daemon/daemon.h"
#include "runner/daemon/daemon_slot.h"

namespace deskd::app {

namespace asio = boost::asio;

namespace {

// The desk as its sandbox would be built, but for hidden paths it cannot see anyway
// (in_sight): another desk's folder elsewhere, added or removed, changes nothing for it.
DeskConfig as_seen(const DeskConfig& desk) {
  DeskConfig seen = desk;
  seen.position = {};
  std::erase_if(seen.hidden_paths, [&](const std::filesystem::path& hidden) { return !in_sight(desk, hidden); });
  return seen;
}

// A running desk is restarted only when what it would be built from differs.
bool needs_restart(const DeskConfig& running, const DeskConfig& next) { return !(as_seen(running) == as_seen(next)); }

// The [runner] keys that differ and that deskd takes only at start (runner_keys() marks
// them), so a change needs a restart.
std::string changed_runner_keys(const RunnerConfig& now, const RunnerConfig& next) {
  std::string keys;
  for (const RunnerKey& row : runner_keys()) {
    if (row.needs_restart && row.differs(now, next)) keys += (keys.empty() ? "" : ", ") + std::string(row.key);
  }
  return keys;
}

}  // namespace

void Daemon::reload(const std::string& who, std::function<void(Result<control::ReloadOutcome>)> done) {
  reloads_.spawn(reload_and_answer(who, std::move(done)));
}

asio::awaitable<void> Daemon::reload_and_answer(std::string who,
                                                std::function<void(Result<control::ReloadOutcome>)> done) {
  std::optional<Result<control::ReloadOutcome>> result;
  if (stopping_) {
    result.emplace(Error::refusal("deskd is stopping; it reloads nothing."));
  } else if (reloading_) {
    result.emplace(Error::refusal("A reload is already under way; try again once it has finished."));
  } else {
    // RELOADING=1 ... READY=1 around this reload only: a refused second one tells systemd nothing.
    if (log_.notify) log_.notify("RELOADING=1");
    try {
      result.emplace(co_await reload_config(std::move(who)));
    } catch (const std::exception& error) {
      reloading_ = false;
      result.emplace(Error::make(ErrorCode::internal, std::string("the reload failed: ") + error.what()));
    }
    if (log_.notify && !stopping_) log_.notify(("READY=1\nSTATUS=" + status_line()).c_str());
  }
  if (!result->ok()) log_.error("reload refused: " + result->error().what);
  done(std::move(*result));
}

asio::awaitable<Result<control::ReloadOutcome>> Daemon::reload_config(std::string who) {
  log_.info("reloading " + config_.file.native() + " for " + who);
  reloading_ = true;
  // Desks still starting (a reload soon after deskd started) come back first: their slots
  // are in use off the loop until then.
  while (starting_ > 0) (void)co_await desk_came_back_.async_wait(kAwait);
  // Planned and applied outside this frame: GCC 12 warns falsely (-Wmismatched-new-delete)
  // about coroutine frames that hold a Config.
  std::shared_ptr<ReloadPlan> plan;
  if (auto planned = plan_reload(); planned.ok()) {
    plan = std::move(planned).value();
  } else {
    reloading_ = false;
    co_return std::move(planned).error();
  }
  // Only the desks that go or change wait out their turns; the others never notice.
  co_await stop_slots(plan->to_stop, config_.runner.shutdown_grace);
  control::ReloadOutcome outcome = apply_reload(*plan);
  co_await start_slots(plan->to_start);
  for (const Slot* slot : plan->to_start) {
    if (!slot->desk_running) outcome.failed[slot->config.name] = slot->error;
  }
  reloading_ = false;
  log_.info("reloaded: " + std::to_string(outcome.started.size()) + " started, " + std::to_string(outcome.stopped.size()) +
            " stopped, " + std::to_string(outcome.restarted.size()) + " restarted, " + std::to_string(outcome.kept.size()) +
            " kept, " + std::to_string(outcome.failed.size()) + " failed to start");
  co_return outcome;
}

Result<std::shared_ptr<Daemon::ReloadPlan>> Daemon::plan_reload() const {
  ConfigLoad load = load_config(config_.file);
  if (!load.config) {
    std::string problems;
    for (const auto& problem : load.problems) problems += "\n" + problem.to_string();
    return Error::refusal("The config has " + std::to_string(load.problems.size()) +
                   " problem(s), so it was not loaded; every desk keeps running as before:" + problems);
  }
  auto plan = std::make_shared<ReloadPlan>();
  plan->next = std::move(*load.config);
  if (const std::string keys = changed_runner_keys(config_.runner, plan->next.runner); !keys.empty()) {
    return Error::refusal("[runner] changed (" + keys + "); deskd takes [runner] only at start, so restart it " +
                   "(systemctl restart deskd) to apply this config. Nothing was reloaded.");
  }
  for (const auto& [name, slot] : slots_) {
    const auto desk = std::find_if(plan->next.desks.begin(), plan->next.desks.end(),
                                   [&](const DeskConfig& candidate) { return candidate.name == name; });
    if (desk == plan->next.desks.end()) {
      plan->stopped.push_back(name);
      plan->to_stop.push_back(slot.get());
    } else if (!slot->desk || !slot->desk_running || needs_restart(slot->config, *desk)) {
      // A desk that could not start (or whose run ended) is tried again: the operator may
      // have fixed what stopped it.
      plan->restarted.push_back(name);
      plan->to_stop.push_back(slot.get());
    } else {
      plan->kept.push_back(name);
    }
  }
  return plan;
}

control::ReloadOutcome Daemon::apply_reload(ReloadPlan& plan) {
  // Taken out under the lock, freed after it: a desk's parts may publish as they go.
  std::vector<std::unique_ptr<Slot>> gone;
  {
    const std::lock_guard lock(waiting_mutex_);
    for (const auto* names : {&plan.stopped, &plan.restarted}) {
      for (const auto& name : *names) {
        auto found = slots_.find(name);
        gone.push_back(std::move(found->second));
        slots_.erase(found);
      }
    }
  }
  gone.clear();
  config_ = std::move(plan.next);
  std::vector<std::string> started;
  for (const auto& desk : config_.desks) {
    if (auto kept = slots_.find(desk.name); kept != slots_.end()) {
      kept->second->config = desk;  // the same desk; where the file wrote it may have moved
      continue;
    }
    const bool restarted = std::find(plan.restarted.begin(), plan.restarted.end(), desk.name) != plan.restarted.end();
    if (!restarted) started.push_back(desk.name);
    auto slot = make_slot(desk);
    Slot& placed = *slot;
    {
      const std::lock_guard lock(waiting_mutex_);
      slots_.emplace(desk.name, std::move(slot));
    }
    // Once deskd began to stop meanwhile, new desks stay stopped: stop() waits for this reload.
    if (!stopping_) plan.to_start.push_back(&placed);
  }
  return control::ReloadOutcome{std::move(started), plan.stopped, plan.restarted, plan.kept, {}};
}

}  // namespace deskd::app
