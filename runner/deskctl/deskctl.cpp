#include "runner/deskctl/deskctl.h"

#include <boost/json.hpp>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "base/command_line.h"
#include "base/terminal_text.h"
#include "runner/deskctl/control_client.h"
#include "runner/events/event_kinds.h"
#include "runner/events/event_text.h"
#include "runner/events/india_time.h"

namespace deskd::control {

namespace json = boost::json;
namespace event_kind = desk::event_kind;

namespace {

constexpr int kOk = 0, kRefused = 1, kUsage = 2, kUnreachable = 3, kReplyCut = 4;

using Options = DeskctlRequest;

int unreachable(const Error& error) {
  std::fprintf(stderr, "deskctl: %s\n", error.what.c_str());
  return kUnreachable;
}

std::string text_of(const json::object& object, const char* key) {
  const json::value* value = object.if_contains(key);
  if (value == nullptr || value->is_null()) return {};
  return value->is_string() ? std::string(value->as_string()) : json::serialize(*value);
}

// A field of a reply on one line, safe for a terminal: desks choose names, paths, reasons
// and errors, and what they wrote is shown, never obeyed (base/terminal_text.h). --json
// output never goes through these.
std::string shown(const json::object& object, const char* key) { return terminal_text(text_of(object, key)); }
// A field that is text of many lines (a diff, usage, an error listing problems).
std::string shown_lines(const json::object& object, const char* key) {
  return terminal_text(text_of(object, key), LineBreaks::kept);
}
// A field that is a time (ISO 8601 in India time): "2026-11-30 09:14:05 IST", its zone kept.
std::string shown_time(const json::object& object, const char* key) {
  return terminal_text(desk::readable_india_time(text_of(object, key)));
}
// A field that is a path: quoted when unusual, marked when it holds a look-alike of '/'.
std::string shown_path(const json::object& object, const char* key) { return terminal_path(text_of(object, key)); }

bool is_ok(const json::object& reply) {
  const json::value* ok = reply.if_contains("ok");
  return ok != nullptr && ok->is_bool() && ok->as_bool();
}

// Prints a refusal and returns its exit status.
int refused(const json::object& reply, bool json_output) {
  if (json_output) std::puts(json::serialize(reply).c_str());
  std::fprintf(stderr, "deskctl: %s\n", shown_lines(reply, "error").c_str());
  return kRefused;
}

std::string joined(const std::vector<std::string>& words, std::size_t from) {
  std::string text;
  for (std::size_t index = from; index < words.size(); ++index) text += (index > from ? " " : "") + words[index];
  return text;
}

void print_desks(const json::array& desks) {
  std::printf("%-20s %-9s %-8s %-7s %s\n", "DESK", "STATE", "MODE", "QUEUED", "MODEL");
  for (const auto& value : desks) {
    const json::object& desk = value.as_object();
    std::string state = shown(desk, "state");
    if (text_of(desk, "paused") == "true") state += " (paused)";
    std::printf("%-20s %-9s %-8s %-7s %s\n", shown(desk, "name").c_str(), state.c_str(), shown(desk, "mode").c_str(),
                shown(desk, "queued").c_str(), shown(desk, "model").c_str());
    if (!text_of(desk, "error").empty()) std::printf("  error: %s\n", shown(desk, "error").c_str());
  }
}

void print_status(const json::object& status) {
  if (const json::value* desks = status.if_contains("desks"); desks != nullptr && desks->is_array()) {
    std::printf("deskd at %s%s\n", shown_time(status, "time").c_str(), text_of(status, "stopping") == "true" ? " (stopping)" : "");
    print_desks(desks->as_array());
    return;
  }
  for (const char* key : {"name", "state", "mode", "paused", "queued", "model", "directory", "network", "open_proposals",
                          "error"}) {
    if (!status.contains(key)) continue;
    const std::string value = std::string_view(key) == "directory" ? shown_path(status, key) : shown(status, key);
    std::printf("%-15s %s\n", (std::string(key) + ":").c_str(), value.c_str());
  }
  if (const json::value* schedules = status.if_contains("schedules"); schedules != nullptr && schedules->is_array()) {
    for (const auto& schedule : schedules->as_array()) {
      std::printf("schedule:       %s, next %s\n", shown(schedule.as_object(), "name").c_str(),
                  shown_time(schedule.as_object(), "next").c_str());
    }
  }
  if (status.contains("usage")) std::printf("usage:\n%s\n", shown_lines(status, "usage").c_str());
}

void print_proposals(const json::array& proposals) {
  if (proposals.empty()) std::puts("No proposals.");
  for (const auto& value : proposals) {
    const json::object& proposal = value.as_object();
    std::printf("%s  %-8s  %s  %s\n  %s\n  why: %s\n", shown(proposal, "id").c_str(), shown(proposal, "status").c_str(),
                shown(proposal, "desk").c_str(), shown_time(proposal, "time").c_str(), shown_path(proposal, "path").c_str(),
                shown(proposal, "reason").c_str());
    // The diff keeps its lines; within them, what the desk wrote is shown escaped.
    const std::string diff = shown_lines(proposal, "diff");
    if (!diff.empty() && text_of(proposal, "status") == "open") std::printf("%s%s", diff.c_str(), diff.back() == '\n' ? "" : "\n");
  }
}

// Returns whether every desk it meant to start started.
bool print_reload(const json::object& reload) {
  for (const char* what : {"started", "stopped", "restarted", "kept"}) {
    const json::value* list = reload.if_contains(what);
    if (list == nullptr || !list->is_array() || list->as_array().empty()) continue;
    std::string names;
    for (const auto& name : list->as_array()) {
      names += (names.empty() ? "" : ", ") + terminal_text(name.is_string() ? std::string_view(name.as_string()) : "");
    }
    std::printf("%-10s %s\n", what, names.c_str());
  }
  if (const json::value* failed = reload.if_contains("failed"); failed != nullptr && failed->is_object()) {
    for (const auto& [name, why] : failed->as_object()) {
      std::printf("failed     %s: %s\n", terminal_text(name).c_str(),
                  terminal_text(why.is_string() ? std::string_view(why.as_string()) : "").c_str());
    }
    return failed->as_object().empty();
  }
  return true;
}

// A simple request: one reply, printed.
int simple(ControlClient& client, const Options& options, json::object request) {
  auto reply = client.call(std::move(request));
  if (!reply.ok()) return unreachable(reply.error());
  if (!is_ok(*reply)) return refused(*reply, options.json_output);
  if (options.json_output) {
    std::puts(json::serialize(*reply).c_str());
    return kOk;
  }
  const json::object& answer = *reply;
  if (options.command == "desks") {
    print_desks(answer.at("desks").as_array());
  } else if (options.command == "status") {
    print_status(answer.at("status").as_object());
  } else if (options.command == "send") {
    std::puts(shown(answer, "trigger").c_str());
  } else if (options.command == "commands") {
    for (const auto& entry : answer.at("commands").as_array()) {
      std::printf("%-16s %s\n", shown(entry.as_object(), "name").c_str(), shown(entry.as_object(), "description").c_str());
    }
  } else if (options.command == "proposals") {
    print_proposals(answer.at("proposals").as_array());
  } else if (options.command == "reload") {
    if (!print_reload(answer.at("reload").as_object())) return kRefused;
  } else {
    const json::object& proposal = answer.at("proposal").as_object();
    std::printf("Proposal %s %s: %s\n", shown(proposal, "id").c_str(), shown(proposal, "status").c_str(),
                shown_path(proposal, "path").c_str());
  }
  return kOk;
}

// Reads lines until the reply to request `id`; events that arrive first are kept.
Result<json::object> reply_to(ControlClient& client, std::int64_t id, std::vector<json::object>& early_events) {
  for (;;) {
    DESKD_ASSIGN_OR_RETURN(auto line, client.read());
    if (!line) return Error::make(ErrorCode::system, "deskd closed the connection.");
    const json::value* line_id = line->if_contains("id");
    if (line->contains("event")) {
      early_events.push_back(line->at("event").as_object());
    } else if (line_id != nullptr && ((line_id->is_int64() && line_id->as_int64() == id) || line_id->is_null()) &&
               line->contains("ok")) {
      return std::move(*line);
    }
  }
}

int events(ControlClient& client, const Options& options) {
  const std::string& desk = options.desk;
  const std::string& from = options.from;
  const bool follow = options.follow;
  json::object request{{"id", 1}, {"op", "follow"}, {"replay", !follow || !from.empty()}};
  if (!desk.empty()) request["desk"] = desk;
  if (!from.empty()) request["from"] = from;
  if (auto sent = client.send(request); !sent.ok()) return unreachable(sent.error());
  for (;;) {
    auto line = client.read();
    if (!line.ok()) return unreachable(line.error());
    if (!*line) return follow ? unreachable(Error::make(ErrorCode::system, "deskd closed the connection.")) : kOk;
    const json::object& object = **line;
    if (object.contains("ok")) {
      if (!is_ok(object)) return refused(object, options.json_output);
      if (text_of(object, "replay_complete") == "false") {
        std::fprintf(stderr, "deskctl: older events are no longer kept in memory; the desk's journal has them all.\n");
      }
    } else if (object.contains("stopping")) {
      std::fprintf(stderr, "deskctl: %s\n", shown(object, "notice").c_str());
    } else if (object.contains("replayed")) {
      if (!follow) return kOk;
    } else if (object.contains("dropped")) {
      std::fprintf(stderr, "deskctl: %s events were dropped because this client fell behind.\n", shown(object, "dropped").c_str());
    } else if (const json::value* event = object.if_contains("event"); event != nullptr && event->is_object()) {
      const std::string text =
          options.json_output ? json::serialize(*event) + "\n" : desk::event_text(event->as_object(), true);
      std::fputs(text.c_str(), stdout);
      std::fflush(stdout);
    }
  }
}

int ask(ControlClient& client, const Options& options) {
  const std::string& desk = options.desk;
  std::vector<json::object> pending;
  if (auto sent = client.send(json::object{{"id", 1}, {"op", "follow"}, {"desk", desk}}); !sent.ok()) return unreachable(sent.error());
  auto followed = reply_to(client, 1, pending);
  if (!followed.ok()) return unreachable(followed.error());
  if (!is_ok(*followed)) return refused(*followed, options.json_output);
  if (auto sent = client.send(json::object{{"id", 2}, {"op", "send"}, {"desk", desk}, {"text", joined(options.words, 0)}});
      !sent.ok()) {
    return unreachable(sent.error());
  }
  auto submitted = reply_to(client, 2, pending);
  if (!submitted.ok()) return unreachable(submitted.error());
  if (!is_ok(*submitted)) return refused(*submitted, options.json_output);
  const std::string trigger = text_of(*submitted, "trigger");
  if (options.json_output) std::puts(json::serialize(*submitted).c_str());

  bool mine = false;  // inside the turn our message started (or steers)
  const auto handle = [&](const json::object& event) -> std::optional<int> {
    const std::string kind = text_of(event, "kind");
    const json::value* data_value = event.if_contains("data");
    const bool about_ours = data_value != nullptr && data_value->is_object() && text_of(data_value->as_object(), "trigger") == trigger;
    if (about_ours && (kind == event_kind::kTurnStarted || kind == event_kind::kSteeringQueued)) mine = true;
    // A failed day rollover is reported as TURN_FAILED for our trigger, yet our turn still runs.
    const bool rollover = data_value != nullptr && data_value->is_object() && data_value->as_object().contains("rollover");
    const bool ends = about_ours && !rollover &&
                      (kind == event_kind::kTurnFinished || kind == event_kind::kTurnFailed || kind == event_kind::kTurnStopped ||
                       kind == event_kind::kCommandAnswered || kind == event_kind::kTriggerFinished);
    // Another client's command answered beside our turn is not part of it.
    const bool others_answer = kind == event_kind::kCommandAnswered && !about_ours;
    if ((mine && !others_answer) || ends || kind == event_kind::kDeskStopped) {
      const std::string text = options.json_output ? json::serialize(event) + "\n" : desk::event_text(event);
      std::fputs(text.c_str(), stdout);
      std::fflush(stdout);
    }
    if (kind == event_kind::kDeskStopped) {
      std::fprintf(stderr, "deskctl: the desk stopped before the turn ended; it will run again when deskd starts.\n");
      return kRefused;
    }
    if (!ends) return std::nullopt;
    if (kind == event_kind::kTurnFailed || kind == event_kind::kTurnStopped) return kRefused;
    // A reply cut by max_tokens or the context window is an answer, but not a whole one.
    const bool cut = kind == event_kind::kTurnFinished && data_value->as_object().contains("cut");
    return cut ? kReplyCut : kOk;
  };
  for (const auto& event : pending) {
    if (auto done = handle(event)) return *done;
  }
  for (;;) {
    auto line = client.read();
    if (!line.ok()) return unreachable(line.error());
    if (!*line) return unreachable(Error::make(ErrorCode::system, "deskd closed the connection before the turn ended."));
    if (const json::value* event = (*line)->if_contains("event"); event != nullptr && event->is_object()) {
      if (auto done = handle(event->as_object())) return *done;
    } else if ((*line)->contains("ok") && !is_ok(**line)) {
      // deskd ended the follow: it is stopping, or found this client too slow.
      return refused(**line, options.json_output);
    } else if ((*line)->contains("stopping")) {
      std::fprintf(stderr, "deskctl: %s\n", shown(**line, "notice").c_str());
    } else if ((*line)->contains("dropped")) {
      std::fprintf(stderr, "deskctl: some events were dropped because this client fell behind.\n");
    }
  }
}

}  // namespace

int run_deskctl(std::span<const std::string_view> arguments) {
  Options options;
  auto parser = make_deskctl_parser(options);
  if (auto status = parse_command_line(*parser, std::vector<std::string>(arguments.begin(), arguments.end()))) {
    return *status;
  }
  const std::string& command = options.command;
  json::object request;
  if (command == "desks" || command == "reload") {
    request = {{"op", command}};
  } else if (command == "status" || command == "proposals") {
    request = {{"op", command}};
    if (!options.desk.empty()) request["desk"] = options.desk;
  } else if (command == "send") {
    request = {{"op", "send"}, {"desk", options.desk}, {"text", joined(options.words, 0)}};
  } else if (command == "commands") {
    request = {{"op", "commands"}, {"desk", options.desk}};
  } else if (command == "accept" || command == "reject") {
    request = {{"op", command}, {"proposal", options.desk}};
  } else if (command != "ask" && command != "events") {
    std::fputs("deskctl: give a command.\nRun 'deskctl --help' for usage.\n", stderr);
    return kUsage;
  }
  auto client = ControlClient::connect(options.socket);
  if (!client.ok()) return unreachable(client.error());
  if (command == "ask") return ask(*client, options);
  if (command == "events") return events(*client, options);
  return simple(*client, options, std::move(request));
}

}  // namespace deskd::control
