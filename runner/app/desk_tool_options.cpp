#include "runner/app/desk_tool_options.h"

#include <signal.h>
#include <unistd.h>

#include <boost/asio.hpp>

#include <cmath>
#include <cstdlib>
#include <cstdio>
#include <exception>
#include <string>

#include "base/clock.h"
#include "runner/app/cli_values.h"
#include "runner/daemon/desk_assembly.h"
#include "runner/desk/refusal_recorder.h"
#include "runner/events/event_kinds.h"
#include "runner/events/event_text.h"
#include "runner/egress/egress_proxy.h"
#include "runner/tools/proposal_store.h"
#include "sandbox/uid_registry.h"

namespace deskd::app {

namespace {

Error usage(std::string message) { return Error::make(ErrorCode::invalid_argument, std::move(message)); }

std::optional<double> parse_seconds(std::string_view text) {
  const std::string copy(text);
  char* end = nullptr;
  const double seconds = std::strtod(copy.c_str(), &end);
  if (copy.empty() || end != copy.c_str() + copy.size() || !std::isfinite(seconds) || seconds <= 0) {
    return std::nullopt;
  }
  return seconds;
}

}  // namespace

Result<bool> take_desk_tool_option(std::span<const std::string_view> arguments, std::size_t& index,
                                   DeskToolOptions& options) {
  DESKD_ASSIGN_OR_RETURN(const bool taken, take_sandbox_option(arguments, index, options.sandbox));
  if (taken) return true;
  const std::string_view argument = arguments[index];
  if (argument != "--timeout" && argument != "--max-output" && argument != "--proposals") return false;
  if (index + 1 >= arguments.size()) return usage(std::string(argument) + " needs a value.");
  const std::string_view value = arguments[++index];
  if (argument == "--timeout") {
    auto seconds = parse_seconds(value);
    if (!seconds) return usage("--timeout needs a number of seconds above 0, not '" + std::string(value) + "'.");
    options.timeout_seconds = *seconds;
  } else if (argument == "--max-output") {
    auto characters = parse_count(value);
    if (!characters || *characters == 0) {
      return usage("--max-output needs a number of characters above 0, not '" + std::string(value) + "'.");
    }
    options.maximum_output_characters = static_cast<std::size_t>(*characters);
  } else {
    options.proposals_folder = std::filesystem::absolute(std::string(value));
  }
  return true;
}

Result<CommandDesk> command_desk(const DeskToolOptions& options) {
  if (!options.sandbox.desk_directory) return usage("--desk DIR is required.");
  DESKD_RETURN_IF_ERROR(check_sandbox_options(options.sandbox));
  CommandDesk command;
  DeskConfig& desk = command.desk;
  std::error_code error;
  desk.directory = std::filesystem::weakly_canonical(std::filesystem::absolute(*options.sandbox.desk_directory), error);
  if (error) desk.directory = std::filesystem::absolute(*options.sandbox.desk_directory).lexically_normal();
  desk.name = desk.directory.filename().native();
  desk.hidden_paths = options.sandbox.hidden_paths;
  desk.timeout_seconds = options.timeout_seconds;
  desk.maximum_output_characters = options.maximum_output_characters;
  desk.sandbox = options.sandbox.settings;
  desk.sandbox.disk_quota_bytes.reset();  // the daemon's alone: it mounts and keeps the quota
  DESKD_RETURN_IF_ERROR(sandbox::settle_ad_hoc_ids(desk.directory, desk.sandbox));
  if (::geteuid() == 0) {
    // The assembly takes a root deskd's ids apart; a half given is completed as the builder does.
    command.ids = DeskIds{desk.sandbox.uid.value_or(sandbox::kDefaultDeskUid),
                          desk.sandbox.gid.value_or(sandbox::kDefaultDeskUid)};
  }
  return command;
}

egress::RefusalSink refusals_to_standard_error() {
  return [](const egress::EgressRefusal& refusal) {
    std::fprintf(stderr, "deskd: network refused %s:%u: %s\n", refusal.host.c_str(),
                 static_cast<unsigned>(refusal.port), refusal.why.c_str());
  };
}

namespace {

// `deskd shell` and `deskd mcp` keep no journal, but a desk's refusals still end its tool
// results (so the model reads why) and are told on standard error as deskctl prints them
// (the egress proxy's in its own words, above). The recorder publishes on a bus of its own,
// which outlives it (declared first, destroyed last).
std::shared_ptr<sandbox::RefusalReporter> refusals_of_a_command(boost::asio::any_io_executor executor,
                                                                const std::string& desk_name) {
  static const SystemClock clock;
  struct Recording {
    desk::EventBus bus{clock};
    std::shared_ptr<desk::DeskRefusalRecorder> recorder;
  };
  auto recording = std::make_shared<Recording>();
  recording->bus.add_sink([](const desk::Event& event) {
    if (event.kind != desk::event_kind::kRefused) return;
    const boost::json::value* enforcer = event.data.if_contains("enforcer");
    if (enforcer != nullptr && enforcer->is_string() && enforcer->as_string() == "egress") return;
    const std::string line = desk::event_text(desk::to_json(event));
    if (!line.empty()) std::fprintf(stderr, "deskd: %s", line.c_str());
  });
  recording->recorder = desk::DeskRefusalRecorder::create(std::move(executor), recording->bus, desk_name, clock);
  return std::shared_ptr<sandbox::RefusalReporter>(recording, recording->recorder.get());
}

}  // namespace

Result<tools::DeskToolSettings> build_desk_tool_settings(const DeskToolOptions& options,
                                                         boost::asio::any_io_executor executor) {
  DESKD_ASSIGN_OR_RETURN(auto command, command_desk(options));
  auto reporter = refusals_of_a_command(executor, command.desk.name);
  egress::RefusalSink told = [printed = refusals_to_standard_error(), reporter](const egress::EgressRefusal& refusal) {
    printed(refusal);
    reporter->record(sandbox::Refusal{sandbox::Enforcer::egress, refusal.host + ":" + std::to_string(refusal.port), "",
                                      refusal.why, std::nullopt});
  };
  DESKD_ASSIGN_OR_RETURN(auto spec, assemble_desk_sandbox(executor, {.desk = command.desk,
                                                                     .state_folder = {},
                                                                     .ids = command.ids,
                                                                     .refusals = std::move(told),
                                                                     .refusal_reporter = reporter}));
  std::shared_ptr<tools::ProposalStore> proposals;
  if (options.proposals_folder) {
    DESKD_ASSIGN_OR_RETURN(auto folder, tools::proposals_folder_outside(spec.confinement, *options.proposals_folder));
    DESKD_ASSIGN_OR_RETURN(proposals, tools::ProposalStore::open(folder, std::make_shared<SystemClock>()));
  }
  return tools::DeskToolSettings{std::move(spec), options.timeout_seconds, options.maximum_output_characters,
                                 command.desk.name, std::move(proposals)};
}

int run_until_done(boost::asio::io_context& io, boost::asio::awaitable<int> main, std::function<void()> on_signal) {
  ::signal(SIGPIPE, SIG_IGN);
  int status = 0;
  boost::asio::signal_set signals(io, SIGINT, SIGTERM, SIGHUP);
  signals.async_wait([&](const boost::system::error_code& error, int number) {
    if (error) return;
    status = 128 + number;
    on_signal();
    // A second signal means the person will not wait for a clean end: go now. The
    // sandbox dies with deskd, so nothing is left behind.
    signals.async_wait([](const boost::system::error_code& again, int second) {
      if (!again) std::_Exit(128 + second);
    });
  });
  boost::asio::co_spawn(io, std::move(main), [&](std::exception_ptr escaped, int result) {
    if (escaped) {
      try {
        std::rethrow_exception(escaped);
      } catch (const std::exception& error) {
        std::fprintf(stderr, "deskd: %s\n", error.what());
      } catch (...) {
        std::fputs("deskd: an unknown exception ended the command\n", stderr);
      }
      result = 1;
    }
    if (status == 0) status = result;
    signals.cancel();
    // The command is over: what still waits (a refusal listener of a sandbox that is closed
    // only after the loop) must not keep the loop running.
    io.stop();
  });
  io.run();
  return status;
}

}  // namespace deskd::app
