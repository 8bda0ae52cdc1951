#include "runner/app/run_command.h"

#include <boost/asio.hpp>
#include <boost/json.hpp>
#include <cstdio>
#include <string>

#include "base/command_line.h"
#include "base/exception_text.h"
#include "base/task_group.h"
#include "runner/app/command_options.h"
#include "runner/app/desk_tool_options.h"
#include "runner/daemon/desk_assembly.h"
#include "runner/desk/desk_runtime.h"
#include "runner/events/event_kinds.h"
#include "runner/events/event_text.h"
#include "runner/events/trigger.h"
#include "runner/journal/journal_tail.h"

namespace deskd::app {

namespace asio = boost::asio;
namespace json = boost::json;

namespace {

int setup_error(const std::string& message) {
  std::fprintf(stderr, "deskd run: %s\n", message.c_str());
  return 125;
}

constexpr const char* kRunDescription =
    "Runs one turn of the desk in DIR for MESSAGE, on the built-in script model (or the\n"
    "JSON-lines script FILE): its bash runs in the desk's sandbox and its file tools are held\n"
    "by the desk's path policy. Prints what the desk does, then exits. A MESSAGE that starts\n"
    "with '-' goes after --.\n"
    "\n"
    "Exit status: 0 the turn finished (or the /command was answered), 1 it failed or was\n"
    "stopped, 2 bad usage, 125 the desk could not be set up.";

struct RunRequest {
  DeskToolOptions options;
  std::string script_path;
  std::string state_folder;
  std::vector<std::string> message_words;
};

int run_turn(RunRequest& request) {
  DeskToolOptions& options = request.options;
  std::string message;
  for (const auto& word : request.message_words) message += (message.empty() ? "" : " ") + word;
  if (!options.sandbox.desk_directory || message.empty()) {
    std::fputs("deskd run: give --desk DIR and a message.\nRun 'deskd run --help' for usage.\n", stderr);
    return 2;
  }
  auto command = command_desk(options);
  if (!command.ok()) return setup_error(command.error().what);
  // The desk the daemon would assemble from a [[desk]] table, on the script model.
  DeskConfig& desk_config = command->desk;
  desk_config.model.provider = "script";
  if (!request.script_path.empty()) desk_config.model.script = std::filesystem::absolute(request.script_path);
  const auto state =
      request.state_folder.empty() ? desk_config.directory / ".deskd" : std::filesystem::absolute(request.state_folder);
  const std::string desk_name = desk_config.name;

  SystemClock clock;
  asio::io_context io;
  desk::EventBus bus(clock);
  // Ids go on from the journal's last one: two runs never write the same id.
  bus.continue_numbering_after(desk::read_recent_events({state / "journal.jsonl"}, 1).highest_event_number);
  auto assembled = assemble_desk(io.get_executor(),
                                 {.desk = desk_config,
                                  .state_folder = state,
                                  .proposals_folder = options.proposals_folder,
                                  .ids = command->ids,
                                  .refusals = refusals_to_standard_error()},
                                 bus, clock);
  if (!assembled.ok()) return setup_error(assembled.error().what);
  desk::DeskRuntime& desk = *(*assembled)->runtime;
  auto events = bus.subscribe(io.get_executor(), 100000);

  // The desk runs as a child of this command: cancelled (its turn over, or ^C) and
  // awaited. Should it fail instead of stopping, the command says so and stops waiting for
  // its events.
  TaskGroup desk_run(io.get_executor(), [&events](std::exception_ptr escaped) {
    std::fprintf(stderr, "deskd run: the desk failed: %s\n", describe_exception(escaped).c_str());
    events->close();
  });
  auto main = [&]() -> asio::awaitable<int> {
    desk_run.spawn(desk.run());
    desk::Trigger trigger;
    // Named here so that the loop below waits for this message's turn: triggers that a
    // killed deskd left unfinished are re-delivered first, and their ends are not ours.
    trigger.id = desk::make_trigger_id();
    const std::string our_trigger = trigger.id;
    trigger.desk = desk_name;
    trigger.text = message;
    trigger.sender = "the command line";
    if (auto submitted = desk.submit(trigger); !submitted.ok()) {
      std::fprintf(stderr, "deskd run: %s\n", submitted.error().what.c_str());
      desk_run.emit(asio::cancellation_type::terminal);
      co_return 125;
    }
    int status = 1;
    bool ended = false;
    for (;;) {
      auto event = co_await events->next();
      if (!event) break;
      // As deskctl shows them (runner/events/event_text.h): what the desk wrote is shown
      // escaped, never obeyed by the terminal.
      std::fputs(desk::event_text(desk::to_json(*event)).c_str(), stdout);
      std::fflush(stdout);
      const json::value* for_trigger = event->data.if_contains("trigger");
      const bool ours = for_trigger != nullptr && for_trigger->is_string() && for_trigger->as_string() == our_trigger;
      // The first end of our trigger's turn, as the event-kind table counts ends (a failed
      // rollover's TURN_FAILED is none; a /command's answer is one); what comes for it after
      // (its TRIGGER_FINISHED) changes nothing.
      if (ours && !ended && desk::ends_turn(event->kind, event->data)) {
        ended = true;
        if (event->kind == desk::event_kind::kTurnFinished || event->kind == desk::event_kind::kCommandAnswered)
          status = 0;
        desk_run.emit(asio::cancellation_type::terminal);
      }
      if (event->kind == desk::event_kind::kDeskStopped) break;
    }
    co_await desk_run.async_wait();
    co_return status;
  };
  return run_until_done(io, main(), [&] { desk_run.emit(asio::cancellation_type::terminal); });
}

}  // namespace

DeskdCommand add_run_command(CLI::App& deskd) {
  auto* command = deskd.add_subcommand("run", "run one turn of a desk on the built-in script model");
  command->footer(kRunDescription);
  auto request = std::make_shared<RunRequest>();
  add_desk_tool_options(*command, request->options);
  command->add_option("--script", request->script_path,
                      "the model's replies, one JSON line per turn (default: the demo)")
      ->type_name("FILE")
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  command->add_option("--state", request->state_folder,
                      "where the journal, session and proposals go (default: DIR/.deskd)")
      ->type_name("DIR")
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  command->add_option("message", request->message_words, "the message to the desk, in one or more words")
      ->type_name("MESSAGE");
  return {command, [request] { return run_turn(*request); }};
}

}  // namespace deskd::app
