// The desk's slash commands, answered by code, in one table that the dispatcher, /help and
// the command menu (deskctl commands) all read: /stop cancels the running turn at once;
// /status, /usage, /help, /skills, /agents, /journal, /tools and /approvals only read the desk and are
// answered beside a turn; /btw asks the model a side question beside it; /pause and /resume
// switch the model off and on, durably (kept in the journal); /queue holds a message for the next turn; /rollover and
// skills wait their turn.

#include <boost/asio.hpp>
#include <boost/json.hpp>

#include "runner/desk/desk_core.h"
#include "runner/desk/session_keeper.h"
#include "runner/desk/skill_library.h"
#include "runner/desk/budget_keeper.h"
#include "runner/desk/usage_tracker.h"
#include "runner/events/india_time.h"

namespace deskd::desk {

namespace asio = boost::asio;
using asio::awaitable;

namespace {

struct ParsedCommand {
  std::string name;       // "/status"
  std::string arguments;  // the rest, trimmed
};

ParsedCommand parse(const std::string& text) {
  const std::size_t end = text.find_first_of(" \t\n");
  ParsedCommand command{text.substr(0, end), ""};
  if (end != std::string::npos) {
    const std::size_t start = text.find_first_not_of(" \t\n", end);
    if (start != std::string::npos) command.arguments = text.substr(start);
  }
  return command;
}

std::string seconds_since(std::chrono::system_clock::time_point start, std::chrono::system_clock::time_point now) {
  return std::to_string(std::chrono::duration_cast<std::chrono::seconds>(now - start).count()) + " s";
}

// Today's usage, and the spend caps with what is spent, reserved and left (/usage, /status).
std::string usage_text(const DeskCore& core) {
  std::string text = core.parts.usage_tracker ? core.parts.usage_tracker->describe() : "This desk tracks no usage.";
  if (core.parts.budget != nullptr) {
    if (std::string budget = core.parts.budget->describe(); !budget.empty()) text += "\n" + budget;
  }
  return text;
}

std::string status_text(DeskCore& core) {
  std::string text = "Desk " + core.settings.name + ": ";
  if (core.state == DeskState::running && core.running_trigger) {
    const Trigger& running = *core.running_trigger;
    const std::string what = running.source == Trigger::Source::schedule ? "the schedule '" + running.schedule + "'"
                                                                          : "a message";
    text += "running a turn for " + seconds_since(core.running_since, core.clock.now()) + " (" + what + ")";
  } else {
    text += std::string(desk_state_name(core.state));
  }
  text += "\nQueue: " + std::to_string(core.queue.size()) + " waiting";
  if (core.inbox.size() > 0) text += ", " + std::to_string(core.inbox.size()) + " steering message(s) for the running turn";
  text += "\nSession: " + (core.parts.session_keeper ? core.parts.session_keeper->session().id : std::string("none kept"));
  text += "\nMode: " + core.settings.mode;
  if (!core.settings.network.empty()) text += "\nNetwork: " + core.settings.network;
  text += std::string("\nPaused: ") + (core.paused ? "yes" : "no");
  text += "\n" + (core.parts.usage_tracker ? usage_text(core) : std::string("Usage today: not tracked"));
  return text;
}

std::string skills_text(const DeskCore& core) {
  if (core.parts.skill_library == nullptr) return "This desk has no skills.";
  std::string text;
  for (const auto& skill : core.parts.skill_library->skills()) {
    text += "/" + skill.name + ": " + skill.description + "\n";
  }
  for (const auto& problem : core.parts.skill_library->problems()) {
    text += "(not usable) " + problem.text() + "\n";
  }
  if (text.empty()) return "This desk has no skills.";
  text.pop_back();
  return text;
}

}  // namespace

namespace {

using Handler = void (*)(DeskCore& core, Trigger& trigger, const ParsedCommand& command);

// One slash command: its name, what /help says of it, and its handler, which answers it
// (now, or beside the running turn) or queues it.
struct SlashCommand {
  const char* name;
  const char* description;
  Handler handle;
};

void reply_now(DeskCore& core, const Trigger& trigger, const ParsedCommand& command, std::string reply) {
  core.answer(trigger, command.name, std::move(reply));
  core.finish(trigger);
}

void help(DeskCore& core, Trigger& trigger, const ParsedCommand& command);

// /pause and /resume. The switch takes effect at once, and is journaled (DESK_PAUSED,
// DESK_RESUMED) and flushed before it is answered: an answered /pause holds across kill -9,
// restarts and reloads, which read the last switch back (DeskCore::recover_journal).
void switch_pause(DeskCore& core, Trigger& trigger, const ParsedCommand& command, bool paused) {
  if (trigger.redelivered && core.pause_set_since_start) {
    // Re-delivered after a restart, and overtaken by a /pause or /resume sent since.
    return reply_now(core, trigger, command,
                     std::string("Not applied: a /pause or /resume sent after the restart came later, and the desk is ") +
                         (core.paused ? "paused." : "not paused."));
  }
  if (!trigger.redelivered) core.pause_set_since_start = true;
  core.paused = paused;
  std::string reply = paused ? "Paused: the desk answers without asking any model until /resume."
                             : "Resumed: the desk asks its model again.";
  core.publish_flushed(paused ? event_kind::kDeskPaused : event_kind::kDeskResumed, {{"trigger", trigger.id}},
                       [trigger, name = command.name, reply = std::move(reply)](DeskCore& desk, Result<void> saved) mutable {
                         if (!saved.ok()) {
                           reply += " It could not be saved, so a restart of deskd would forget it: " + saved.error().what;
                         }
                         desk.answer(trigger, name, std::move(reply));
                         desk.finish(trigger);
                       });
}

// clang-format off
const SlashCommand kCommands[] = {
    {"/status", "what the desk is doing, its queue, session, mode and today's usage",
     [](DeskCore& core, Trigger& trigger, const ParsedCommand& command) { reply_now(core, trigger, command, status_text(core)); }},
    {"/usage", "today's model usage (the desk's and its subagents'), its estimated cost, and the spend caps",
     [](DeskCore& core, Trigger& trigger, const ParsedCommand& command) { reply_now(core, trigger, command, usage_text(core)); }},
    {"/help", "this list", help},
    {"/skills", "the desk's skills",
     [](DeskCore& core, Trigger& trigger, const ParsedCommand& command) { reply_now(core, trigger, command, skills_text(core)); }},
    {"/agents", "the subagents running and recent: id, task, state, turns, tokens",
     [](DeskCore& core, Trigger& trigger, const ParsedCommand& command) { reply_now(core, trigger, command, agents_text(core)); }},
    {"/journal", "/journal [N] [KIND]: the desk's last N journal entries (20), of one kind if named",
     [](DeskCore& core, Trigger& trigger, const ParsedCommand& command) { answer_journal(core, trigger, command.arguments); }},
    {"/tools", "the desk's tools and what each may touch",
     [](DeskCore& core, Trigger& trigger, const ParsedCommand& command) { reply_now(core, trigger, command, tools_text(core)); }},
    {"/approvals", "the desk's API calls waiting for a person's approval (deskctl approve or deny them)",
     [](DeskCore& core, Trigger& trigger, const ParsedCommand& command) { reply_now(core, trigger, command, approvals_text(core)); }},
    {"/stop", "stop the running turn (and its subagents) at once; the queue goes on",
     [](DeskCore& core, Trigger& trigger, const ParsedCommand& command) {
       if (core.state != DeskState::running || !core.turn_stop) return reply_now(core, trigger, command, "No turn is running.");
       core.stop_requested = true;
       core.turn_stop->emit(asio::cancellation_type::terminal);
       reply_now(core, trigger, command, "Stopping the running turn; the queue goes on.");
     }},
    {"/btw", "/btw <question>: ask the model a side question beside the running turn",
     [](DeskCore& core, Trigger& trigger, const ParsedCommand& command) {
       if (command.arguments.empty()) {
         return reply_now(core, trigger, command, "Ask a question after /btw, for example: /btw what is the lot size?");
       }
       answer_beside(core, trigger, "/btw", core.runner->side_question(command.arguments), "The side question failed: ");
     }},
    {"/queue", "/queue <message>: hold a message for the next turn instead of steering this one",
     [](DeskCore& core, Trigger& trigger, const ParsedCommand& command) {
       if (command.arguments.empty()) return reply_now(core, trigger, command, "Write the message after /queue.");
       trigger.text = command.arguments;
       trigger.kind = Trigger::Kind::message;
       trigger.queued_explicitly = true;
       core.enqueue(std::move(trigger));
     }},
    {"/pause", "answer without asking any model until /resume (kept across restarts)",
     [](DeskCore& core, Trigger& trigger, const ParsedCommand& command) { switch_pause(core, trigger, command, true); }},
    {"/resume", "let the desk ask its model again",
     [](DeskCore& core, Trigger& trigger, const ParsedCommand& command) { switch_pause(core, trigger, command, false); }},
    // Waits its turn in the queue: run_queued_command runs it.
    {"/rollover", "summarise the session and start a fresh one",
     [](DeskCore& core, Trigger& trigger, const ParsedCommand&) { core.enqueue(std::move(trigger)); }},
};
// clang-format on

void help(DeskCore& core, Trigger& trigger, const ParsedCommand& command) {
  std::string text = "Commands:";
  for (const auto& entry : catalogue(core)) text += "\n" + entry.name + " - " + entry.description;
  reply_now(core, trigger, command, std::move(text));
}

}  // namespace

namespace {

// One answer beside the turn, start to end: it cannot throw (a failure is the answer), so the
// desk's group of side answers never hears of one.
awaitable<void> answer_side(std::shared_ptr<DeskCore> self, Trigger trigger, std::string command,
                            awaitable<std::string> work, std::string failure_prefix) {
  std::string reply;
  try {
    reply = co_await std::move(work);
  } catch (const std::exception& failure) {
    reply = failure_prefix + failure.what();
  } catch (...) {
    reply = failure_prefix + "an unknown error.";
  }
  self->answer(trigger, command, std::move(reply));
  self->finish(trigger);
}

}  // namespace

void answer_beside(DeskCore& core, const Trigger& trigger, std::string command, awaitable<std::string> work,
                   std::string failure_prefix) {
  core.beside.spawn(
      answer_side(core.shared_from_this(), trigger, std::move(command), std::move(work), std::move(failure_prefix)));
}

std::vector<CommandEntry> catalogue(const DeskCore& core) {
  std::vector<CommandEntry> entries;
  for (const SlashCommand& command : kCommands) entries.push_back({command.name, command.description});
  if (core.parts.skill_library != nullptr) {
    for (const auto& skill : core.parts.skill_library->skills()) entries.push_back({"/" + skill.name, skill.description});
  }
  return entries;
}

void handle_command(DeskCore& core, Trigger trigger) {
  const ParsedCommand command = parse(trigger.text);
  for (const SlashCommand& known : kCommands) {
    if (command.name == known.name) return known.handle(core, trigger, command);
  }
  const bool is_skill = core.parts.skill_library != nullptr && command.name.size() > 1 &&
                        core.parts.skill_library->find(command.name.substr(1)) != nullptr;
  if (is_skill) return core.enqueue(std::move(trigger));
  reply_now(core, trigger, command, "Unknown command " + command.name + ". Send /help for the list of commands.");
}

awaitable<bool> run_queued_command(DeskCore& core, const Trigger& trigger) {
  if (trigger.queued_explicitly || trigger.text.empty() || trigger.text.front() != '/') co_return false;
  const ParsedCommand command = parse(trigger.text);
  if (command.name == "/rollover") {
    std::string reply;
    try {
      reply = co_await core.roll_over();
    } catch (const std::exception& error) {
      reply = std::string("The rollover failed: ") + error.what();
    }
    core.answer(trigger, command.name, std::move(reply));
    core.finish(trigger);
    co_return true;
  }
  if (core.parts.skill_library != nullptr && core.parts.skill_library->find(command.name.substr(1)) != nullptr) {
    if (core.paused) co_return false;  // answered as any paused turn
    auto invocation = core.parts.skill_library->invocation(command.name.substr(1), command.arguments);
    if (!invocation.ok()) {
      core.answer(trigger, command.name, invocation.error().what);
      core.finish(trigger);
      co_return true;
    }
    co_await core.run_turn(trigger, core.context_line(trigger) + "\n\n" + *invocation);
    co_return true;
  }
  co_return false;
}

}  // namespace deskd::desk
