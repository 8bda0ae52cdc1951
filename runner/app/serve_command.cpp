#include "runner/app/serve_command.h"

#include <signal.h>
#include <sys/resource.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

#include <spdlog/fmt/fmt.h>
#include <boost/asio.hpp>
#include <boost/json.hpp>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "base/command_line.h"
#include "base/exception_text.h"
#include "base/task_group.h"
#include "runner/config/config.h"
#include "runner/config/state_folder_check.h"
#include "runner/control/control_server.h"
#include "runner/daemon/daemon.h"
#include "runner/daemon/daemon_web.h"
#include "runner/daemon/deskd_log.h"
#include "runner/events/event_kinds.h"
#include "sandbox/own_user_namespace.h"
#include "sandbox/supplementary_groups.h"

namespace deskd::app {

namespace asio = boost::asio;
namespace json = boost::json;

namespace {

constexpr const char* kServeDescription =
    "Runs every desk of FILE on one event loop and serves deskctl on the control socket\n"
    "named by [runner] socket. Logs go to stderr (journald keeps them under systemd).\n"
    "The socket serves at once; desks start beside it, two at a time (deskctl desks\n"
    "shows them \"starting\"; a message sent to one waits until it runs). Tells systemd\n"
    "READY=1 once the socket serves, STATUS= how many desks run and which are kept stopped,\n"
    "STOPPING=1 when it stops (Type=notify), and WATCHDOG=1 at half of WatchdogSec= while\n"
    "its event loop runs.\n"
    "SIGHUP (or deskctl reload) reads FILE again: desks added, removed or changed are\n"
    "started, stopped or restarted, the others keep running; a config with a problem, or\n"
    "whose [runner] changed, is refused and logged, and the running one kept (RELOADING=1,\n"
    "then READY=1). SIGTERM or SIGINT stop it cleanly: no new requests (clients are answered\n"
    "\"stopping\"), running turns get [runner] shutdown_grace_seconds, then every desk is\n"
    "stopped and its journal flushed; the exit status is 0. A second signal exits at once.\n"
    "\n"
    "Exit statuses: 0 stopped cleanly, 1 could not start, 2 bad usage or config.";

// One log line per event worth a line: what happened on which desk, never the content of
// messages, tool output or model text (they belong to the journal and the user).
// Under journald the desk and the trigger are also the entry's DESK= and TRIGGER=.
asio::awaitable<void> log_events(std::shared_ptr<desk::EventSubscription> events, std::shared_ptr<DeskdLog> log) {
  for (;;) {
    auto event = co_await events->next();
    if (!event) break;
    const json::value* trigger = event->data.if_contains("trigger");
    std::string line = event->desk + ": " + event->kind;
    LogFields fields{event->desk, ""};
    if (trigger != nullptr && trigger->is_string()) {
      fields.trigger = std::string(trigger->as_string());
      line += " " + fields.trigger;
    }
    const auto row = desk::find_event_kind(event->kind);
    const desk::EventLogLevel level = row ? row->log_level : desk::EventLogLevel::debug;
    if (level == desk::EventLogLevel::warn) {
      const json::value* error = event->data.if_contains("error");
      const json::value* reason = event->data.if_contains("reason");
      if (error != nullptr && error->is_string()) line += ": " + std::string(error->as_string());
      if (reason != nullptr && reason->is_string()) line += ": " + std::string(reason->as_string());
      log->warn(line, fields);
    } else if (level == desk::EventLogLevel::info) {
      log->info(line, fields);
    } else {
      log->debug(line, fields);
    }
  }
}

// Control clients, journals, the sandboxes' pipes: each is a descriptor, and the soft limit
// (often 1024) is far below what the hard limit allows. The sandboxes set their own limit,
// so raising deskd's does not widen theirs.
void raise_open_file_limit(const DeskdLog& log) {
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) != 0) {
    log.warn(fmt::format("reading the open-files limit failed: {}", std::strerror(errno)));
    return;
  }
  if (limit.rlim_cur >= limit.rlim_max) {
    log.info(fmt::format("open files: at most {} (soft and hard limit)", limit.rlim_cur));
    return;
  }
  const rlim_t before = limit.rlim_cur;
  limit.rlim_cur = limit.rlim_max;
  if (::setrlimit(RLIMIT_NOFILE, &limit) != 0) {
    log.warn(fmt::format("raising the open-files limit from {} to {} failed: {}; deskd keeps {}", before,
                         limit.rlim_max, std::strerror(errno), before));
    return;
  }
  log.info(fmt::format("open files: soft limit raised from {} to {}, the hard limit", before, limit.rlim_max));
}

// Says which user namespace deskd runs in; false (logged) when the config requires one
// of its own and this is the host's.
bool check_own_user_namespace(bool required, const DeskdLog& log) {
  auto found = sandbox::own_user_namespace();
  if (!found.ok()) {
    if (!required) return true;
    log.error(fmt::format("[runner] require_user_namespace = true, but deskd cannot tell its user namespace: {}",
                          found.error().what));
    return false;
  }
  if (!found->host) {
    log.info(fmt::format("deskd runs in a user namespace of its own (uid_map {})", found->uid_map));
    return true;
  }
  if (!required) {
    log.info(fmt::format("deskd runs in the host's user namespace (uid_map {})", found->uid_map));
    return true;
  }
  log.error(fmt::format(
      "[runner] require_user_namespace = true, but deskd runs in the host's user namespace (uid_map {}): "
      "the pod's hostUsers: false had no effect (the runtime lacks user-namespace support) or the container "
      "was started without one; deskd does not start",
      found->uid_map));
  return false;
}

void notify_systemd(const char* state) {
  if (std::getenv("NOTIFY_SOCKET") != nullptr) (void)sd_notify(0, state);
}

// WATCHDOG=1 from a timer on the event loop, so a loop that hangs stops the pings and
// systemd restarts deskd. Twice per WatchdogSec=, as sd_watchdog_enabled(3) advises.
asio::awaitable<void> ping_watchdog(std::chrono::microseconds period) {
  asio::steady_timer timer(co_await asio::this_coro::executor);
  for (;;) {
    notify_systemd("WATCHDOG=1");
    timer.expires_after(period / 2);
    auto [error] = co_await timer.async_wait(asio::as_tuple(asio::use_awaitable));
    if (error) co_return;
  }
}

int serve(const std::filesystem::path& config_path) {
  ConfigLoad loaded = load_config(config_path);
  if (!loaded.config) {
    for (const auto& problem : loaded.problems) std::fprintf(stderr, "%s\n", problem.to_string().c_str());
    std::fprintf(stderr, "deskd serve: the config has %zu problem(s); nothing was started.\n", loaded.problems.size());
    return 2;
  }
  Config config = std::move(*loaded.config);
  auto log = DeskdLog::open(log_level_named(config.runner.log_level).value_or(LogLevel::info));
  DeskdLog::install(log);

  std::optional<gid_t> socket_group;
  if (config.runner.socket_group) {
    auto group = control::group_id(*config.runner.socket_group);
    if (!group.ok()) {
      log->error(fmt::format("socket_group: {}", group.error().what));
      return 2;
    }
    socket_group = *group;
  }
  std::vector<gid_t> allowed_groups;
  for (const auto& name : config.runner.allowed_groups) {
    auto group = control::group_id(name);
    if (!group.ok()) {
      log->error(fmt::format("allowed_groups: {}", group.error().what));
      return 2;
    }
    allowed_groups.push_back(*group);
  }
  std::vector<uid_t> allowed_uids(config.runner.allowed_uids.begin(), config.runner.allowed_uids.end());

  ::signal(SIGPIPE, SIG_IGN);
  asio::io_context io;
  // Caught from here on, before the socket exists: a SIGTERM sent as soon as it appears
  // (desks still starting) stops deskd cleanly instead of killing it. Signals that come
  // before the wait below are kept for it.
  asio::signal_set signals(io, SIGINT, SIGTERM, SIGHUP);
  SystemClock clock;
  const auto grace = config.runner.shutdown_grace;
  const std::uint32_t client_buffer_mb = config.runner.client_buffer_mb;
  const std::size_t max_clients = config.runner.max_clients;
  raise_open_file_limit(*log);
  if (!check_own_user_namespace(config.runner.require_user_namespace, *log)) return 1;
  // Every launch refuses an unprivileged deskd's supplementary groups unless its desk allows
  // them (sandbox/supplementary_groups.h); refused here first, so that deskd does not start
  // with desks that could never launch.
  const bool every_desk_allows_groups = std::all_of(config.desks.begin(), config.desks.end(), [](const DeskConfig& desk) {
    return desk.sandbox.allow_supplementary_groups;
  });
  if (auto groups = sandbox::check_supplementary_groups(every_desk_allows_groups); !groups.ok()) {
    log->error(groups.error().what);
    return 1;
  }
  // load_config found the state folder usable; it is made now, so that one that cannot be
  // stops deskd here rather than every desk after READY=1.
  if (auto state = make_state_folder(config.runner.state_folder); !state.ok()) {
    log->error(state.error().what + " deskd does not start.");
    return 1;
  }
  const std::filesystem::path socket_path = config.runner.socket_path;
  const RunnerConfig runner = config.runner;
  Daemon daemon(io.get_executor(), std::move(config), clock,
                DaemonLog{[log](LogLevel level, const std::string& text, const LogFields& fields) {
                            log->write(level, text, fields);
                          },
                          notify_systemd});

  control::ControlServerSettings server_settings{socket_path, socket_group,
                                                 control::PeerPolicy(::geteuid(), allowed_uids, allowed_groups),
                                                 [log](const std::string& text) { log->warn(text); },
                                                 std::size_t{client_buffer_mb} << 20, max_clients};
  // The socket first: a second deskd on the same config must stop here, before its desks
  // would run beside the first one's.
  auto server = control::ControlServer::open(io.get_executor(), std::move(server_settings), daemon);
  if (!server.ok()) {
    log->error(server.error().what);
    return 1;
  }
  // The web page beside it (docs/WEB.md), with the same peers; deskd does not start without
  // the page its config asks for.
  auto web_server = open_daemon_web(io.get_executor(), runner, daemon, clock,
                                    DaemonWebParts{control::PeerPolicy(::geteuid(), allowed_uids, allowed_groups),
                                                   socket_group, [log](const std::string& text) { log->warn(text); },
                                                   DESKD_VERSION,
                                                   // GET /metrics: 404 until the daemon keeps metrics (issue 32).
                                                   {}});
  if (!web_server.ok()) {
    log->error(web_server.error().what + " deskd does not start.");
    return 1;
  }
  // deskd's own coroutines: none is left to end unseen. They end with the loop (io.stop()
  // once the daemon and the socket have stopped), so the group is never awaited.
  TaskGroup serving(io.get_executor(), [log](std::exception_ptr escaped) {
    log->error("a coroutine of deskd serve ended: " + describe_exception(escaped));
  });
  serving.spawn(log_events(daemon.subscribe(), log));
  // The socket serves from here on, while the desks start beside it: `deskctl desks` shows
  // them "starting", and what is sent to one waits until it runs.
  serving.spawn((*server)->run());
  if (*web_server) {
    serving.spawn((*web_server)->run());
    const std::string origin = (*web_server)->tcp_origin();
    log->info(fmt::format("deskd serves its web page on {}{}{}", runner.web_socket_path.native(),
                          !runner.web_socket_path.empty() && !origin.empty() ? " and " : "", origin));
  }
  daemon.start([&daemon, log, socket_path](std::size_t started) {
    log->info(fmt::format("deskd serving {} of {} desks on {}", started, daemon.desks().size(), socket_path.native()));
    notify_systemd(("STATUS=" + daemon.status_line()).c_str());
  });
  log->info(fmt::format("deskd listening on {}; starting {} desks", socket_path.native(), daemon.desks().size()));
  notify_systemd(("READY=1\nSTATUS=" + daemon.status_line()).c_str());
  if (std::uint64_t watchdog = 0; sd_watchdog_enabled(0, &watchdog) > 0) {
    serving.spawn(ping_watchdog(std::chrono::microseconds(watchdog)));
    log->info(fmt::format("pinging the systemd watchdog every {} ms", watchdog / 2000));
  }

  bool stopped_cleanly = false;
  const auto shutdown = [&]() -> asio::awaitable<void> {
    notify_systemd("STOPPING=1");
    // Clients are answered through the grace, with a clear "stopping" instead of a closed
    // socket, and followers see the running turns end; then they are told it is over.
    (*server)->begin_stopping("deskd is stopping and takes no new requests; running turns get up to " +
                              std::to_string(grace.count()) + " ms to finish.");
    // A stop that fails still ends deskd, with status 1.
    try {
      co_await daemon.stop(grace);
      co_await (*server)->stop(std::chrono::seconds(1));
      if (*web_server) {
        daemon.attach_web(nullptr);
        (*web_server)->close();
      }
      stopped_cleanly = true;
      log->info("deskd stopped");
    } catch (const std::exception& error) {
      log->error(std::string("stopping failed: ") + error.what());
    }
    io.stop();
  };
  std::function<void(const boost::system::error_code&, int)> on_signal;
  bool shutting_down = false;
  on_signal = [&](const boost::system::error_code& error, int number) {
    if (error) return;
    if (number == SIGHUP) {
      daemon.reload("SIGHUP", [](const Result<control::ReloadOutcome>&) {});  // the daemon logs the outcome
    } else if (!shutting_down) {
      shutting_down = true;
      log->info(
          fmt::format("{} received: stopping (grace {} ms)", number == SIGTERM ? "SIGTERM" : "SIGINT", grace.count()));
      serving.spawn(shutdown());
    } else {
      // A second signal: the person will not wait. The sandboxes die with deskd.
      log->warn("second signal: exiting at once");
      std::_Exit(128 + number);
    }
    signals.async_wait(on_signal);
  };
  signals.async_wait(on_signal);
  io.run();
  return stopped_cleanly ? 0 : 1;
}

}  // namespace

DeskdCommand add_serve_command(CLI::App& deskd) {
  auto* command = deskd.add_subcommand("serve", "run every desk of a config and serve deskctl on the control socket");
  command->footer(kServeDescription);
  auto config_path = std::make_shared<std::string>();
  command->add_option("--config", *config_path, "the daemon's config (required)")
      ->type_name("FILE")
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  return {command, [config_path] {
            if (config_path->empty()) {
              std::fputs("deskd serve: give --config FILE.\nRun 'deskd serve --help' for usage.\n", stderr);
              return 2;
            }
            return serve(*config_path);
          }};
}

}  // namespace deskd::app
