#pragma once
// Daemon: every desk of a config on one event loop, and the answers to the control socket.
// start() assembles the desks concurrently on two threads of their own, so the socket
// answers while they start (a starting desk says "starting" and holds what is sent to it;
// a desk that cannot start is reported and kept stopped; the others run); stop() is the
// two-phase shutdown: refuse new triggers, give running turns the grace period, then cancel
// them, close the sandboxes and let the journals flush.

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/thread_pool.hpp>

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "base/clock.h"
#include "base/task_group.h"
#include "runner/config/config.h"
#include "runner/control/control_service.h"
#include "runner/control/event_history.h"
#include "runner/daemon/desk_ids.h"
#include "runner/daemon/journal_entry.h"
#include "runner/events/event_bus.h"
#include "runner/metrics/deskd_metrics.h"

namespace deskd::desk {
class LandlockAuditReader;
}

namespace deskd::web {
class WebServer;
}

namespace deskd::app {

struct AssembledDesk;
struct DeskMeasures;

/// What the daemon reports to its log; `fields` name the desk a message is about, so that
/// the journal files it under DESK= (runner/daemon/deskd_log.h).
struct DaemonLog {
  std::function<void(LogLevel, const std::string&, const LogFields&)> write;
  /// Tells the service manager a state ("RELOADING=1", "READY=1"); may be empty.
  std::function<void(const char*)> notify;

  void info(const std::string& text, const LogFields& fields = {}) const {
    if (write) write(LogLevel::info, text, fields);
  }
  void warn(const std::string& text, const LogFields& fields = {}) const {
    if (write) write(LogLevel::warn, text, fields);
  }
  void error(const std::string& text, const LogFields& fields = {}) const {
    if (write) write(LogLevel::error, text, fields);
  }
};

/// How many bytes of messages sent through the control socket may wait in one desk (in its
/// queue or its steering inbox) before further sends to it are refused. deskd holds every
/// waiting message in memory; a client that sends faster than the desk works must be told
/// no rather than grow deskd without bound.
inline constexpr std::size_t kMaximumWaitingBytesPerDesk = std::size_t{64} << 20;
/// What a message held for a starting desk is counted as beyond its text: its sender, its
/// callback and their allocations, so that a million one-byte sends are not 1 MB.
inline constexpr std::size_t kHeldMessageOverhead = 256;

class Daemon final : public control::ControlService {
 public:
  Daemon(boost::asio::any_io_executor executor, Config config, const Clock& clock, DaemonLog log);
  ~Daemon() override;

  /// Reads the journals' recent events (for ids and replays), then assembles and starts every
  /// desk off the event loop, concurrently; returns at once. `started` gets, on the event
  /// loop, how many started once every desk has started or failed.
  void start(std::function<void(std::size_t started)> started);

  /// For the service manager's STATUS=: "3 of 4 desks running; kept stopped: b: REASON",
  /// or "starting: 5 of 1000 desks running, 995 starting" while they start
  /// (service_status_line).
  std::string status_line() const;

  /// Refuses new triggers, waits up to `grace` for running turns, then stops every desk
  /// and waits until each has closed its tools.
  boost::asio::awaitable<void> stop(std::chrono::milliseconds grace);

  /// Reads the config file again and makes the desks match it: desks added, removed or
  /// changed are started, stopped (after the grace for a running turn) or restarted, and the
  /// others keep running, their turns untouched. A config with a problem, or whose [runner]
  /// changed, is refused and nothing changes. `done` gets what was done, by desk name:
  /// {"started", "stopped", "restarted", "kept", "failed": {name: why}}, or the refusal.
  void reload(const std::string& who, std::function<void(Result<control::ReloadOutcome>)> done) override;

  desk::EventBus& bus() { return bus_; }
  /// The web page's server (daemon_web.h), which the web_url op asks for login links; null
  /// detaches it. The server must outlive the daemon's use of it (deskd serve closes both).
  void attach_web(web::WebServer* server) { web_server_ = server; }

  /// Every metric of deskd in the Prometheus text format (runner/metrics/prometheus_text.h),
  /// with the desks' states and queues and deskd's memory and descriptors as they are now:
  /// what `/metrics` serves and `deskctl metrics` prints. On the event loop, as every answer.
  std::string metrics_text() override;
  /// How many clients the web server has now (deskd_web_clients); safe from any thread.
  void set_web_clients(std::size_t connected) { metrics_.set_web_clients(connected); }
  /// Where metrics_text() reads how many clients the control socket has (the server's
  /// connection_count, asked on the event loop); it must outlive the daemon's serving.
  void count_control_clients_with(std::function<std::size_t()> count) { control_clients_ = std::move(count); }

  bool has_desk(const std::string& name) const override;
  std::vector<control::DeskSummary> desks() const override;
  control::DaemonStatus daemon_status() const override;
  Result<control::DeskStatus> status(const std::string& desk) const override;
  void send(const std::string& desk, const std::string& text, const std::string& sender,
            std::function<void(Result<std::string>)> sent) override;
  Result<std::vector<desk::CommandEntry>> commands(const std::string& desk) const override;
  Result<std::vector<tools::Proposal>> proposals(const std::string& desk) const override;
  Result<tools::Proposal> decide(const std::string& proposal, bool accept, const std::string& who) override;
  Result<std::vector<control::ApprovalSummary>> approvals(const std::string& desk) const override;
  Result<control::ApprovalSummary> decide_approval(const std::string& approval, bool approve,
                                                   const std::string& who) override;
  void ledger(const std::string& desk, const std::string& since, bool verify,
              std::function<void(Result<control::LedgerReading>)> done) override;
  Result<desk::BudgetStatus> budget(const std::string& desk, std::optional<double> add_usd,
                                    const std::string& who) override;
  Result<std::vector<control::DeskSpend>> spend(const std::string& desk) const override;
  /// A one-time login link from the web server attach_web() gave; refused without one.
  Result<control::WebLoginLink> web_url() override;
  std::shared_ptr<desk::EventSubscription> subscribe() override;
  control::EventHistory::Replay replay(const std::string& desk, std::optional<std::uint64_t> after,
                                       std::size_t maximum_bytes) const override;

 private:
  struct Slot;
  control::DeskSummary desk_summary(const Slot& slot) const;
  /// Assembles these desks off the loop, concurrently, and runs each that could be assembled
  /// (a desk that could not is kept stopped, and why in its slot); done once each has.
  boost::asio::awaitable<void> start_slots(std::vector<Slot*> slots);
  /// Until none of these slots is starting any more.
  boost::asio::awaitable<void> wait_until_started(std::vector<Slot*> slots);
  /// Hands these slots to the assembly threads: there, under a root deskd, their ids are
  /// chosen first in one call (desk_ids_for_desks), then each is assembled;
  /// finish_starting() gets each result.
  void begin_starting(std::vector<Slot*> slots);
  /// On an assembly thread: the desks' ids by name (absent under an unprivileged deskd), or
  /// why a desk has none.
  std::map<std::string, Result<std::optional<DeskIds>>> choose_desk_ids(const std::vector<DeskToIdentify>& desks) const;
  /// On an assembly thread: assembles the slot's desk with `ids` (or keeps it stopped with
  /// why it has none) and hands the result to finish_starting() on the loop.
  void assemble_slot(Slot& slot, Result<std::optional<DeskIds>> ids);
  /// On the loop: runs the assembled desk (or records why it could not start) and answers
  /// what was sent to it meanwhile.
  void finish_starting(Slot& slot, Result<std::unique_ptr<AssembledDesk>> assembled);
  /// Sends what the slot held while it started, or refuses it with `refusal`.
  void release_held(Slot& slot, const std::optional<Error>& refusal);
  /// A slot for this desk, its parts' groups logging an escaped exception about it.
  std::unique_ptr<Slot> make_slot(const DeskConfig& desk);
  /// Runs one of a desk's coroutines (its runtime, its schedules) in `group` until it ends or
  /// the group is cancelled; `running` is true meanwhile.
  static void spawn_desk_part(boost::asio::awaitable<void> part, TaskGroup& group, bool& running);
  /// Stops these desks as stop() stops every desk, and waits until each has closed.
  boost::asio::awaitable<void> stop_slots(std::vector<Slot*> slots, std::chrono::milliseconds grace);
  struct ReloadPlan;
  boost::asio::awaitable<Result<control::ReloadOutcome>> reload_config(std::string who);
  Result<std::shared_ptr<ReloadPlan>> plan_reload() const;
  /// Applies the plan's config: the desks that go are gone, the new and restarted ones get
  /// slots (plan.to_start) that the caller starts.
  control::ReloadOutcome apply_reload(ReloadPlan& plan);
  boost::asio::awaitable<void> reload_and_answer(std::string who,
                                                 std::function<void(Result<control::ReloadOutcome>)> done);
  /// Why one more message of `more` bytes is refused by this desk (its waiting and held
  /// messages are at the limit), or nullopt. Under waiting_mutex_.
  std::optional<Error> refuse_if_full(const Slot& slot, std::size_t more) const;
  /// Keeps a message sent to a starting desk until release_held().
  void hold(Slot& slot, const std::string& text, const std::string& sender,
            std::function<void(Result<std::string>)> sent);
  void journal_daemon_event(const desk::Event& event);
  void start_landlock_audit();
  /// The hooks through which a desk's parts tell metrics_ what they measure.
  DeskMeasures desk_measures(const std::string& desk);
  /// Forgets a waiting message once the desk has taken it (its turn started, it was
  /// delivered as steering, answered or finished), and all of a desk's when it stops.
  void track_waiting(const desk::Event& event);

  boost::asio::any_io_executor executor_;
  Config config_;
  const Clock& clock_;
  DaemonLog log_;
  // Before the bus, whose sink feeds it, and the desks, whose sandboxes, journals and usage
  // trackers tell it what they measure: it goes after all of them.
  metrics::DeskdMetrics metrics_;
  std::function<std::size_t()> control_clients_;
  web::WebServer* web_server_ = nullptr;  // attach_web's; the web_url op asks it
  desk::EventBus bus_;
  control::EventHistory history_;
  // A root deskd's reader of Landlock's audit records, shared by every desk's refusal
  // recorder; none when the kernel cannot tell deskd (start() says why).
  std::shared_ptr<desk::LandlockAuditReader> landlock_audit_;
  std::map<std::string, std::unique_ptr<Slot>> slots_;
  mutable std::mutex waiting_mutex_;  // guards each Slot's waiting messages: sinks run on the publishing thread
  bool stopping_ = false;
  bool reloading_ = false;
  // Reloads and the refusals of a second one; stop() waits for them.
  TaskGroup reloads_;
  std::size_t starting_ = 0;  // slots being assembled off the loop
  // Cancelled (never expires) each time a desk being assembled comes back to the loop:
  // what waits for desks to start waits on it.
  boost::asio::steady_timer desk_came_back_;
  std::atomic<bool> abandon_starting_ = false;  // stop() began: assemblies not yet begun are not
  // Where desks are assembled: building a sandbox and trying it blocks for milliseconds, so
  // off the event loop, two at a time. Last member: joined before the slots go.
  std::unique_ptr<boost::asio::thread_pool> assembly_threads_;
  // Where ledgers are read and verified (files of up to years of calls), off the event loop,
  // one at a time; joined first in the destructor. Made on the first `ledger` request.
  std::unique_ptr<boost::asio::thread_pool> ledger_thread_;
};

}  // namespace deskd::app
