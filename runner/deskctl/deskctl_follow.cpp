#include "runner/deskctl/deskctl_follow.h"

#include <boost/json.hpp>

#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "runner/control_protocol/control_protocol.h"
#include "runner/deskctl/deskctl_output.h"
#include "runner/events/event_kinds.h"
#include "runner/events/event_text.h"

namespace deskd::control::deskctl {

namespace json = boost::json;
namespace event_kind = desk::event_kind;

namespace {

// Reads lines until the reply to request `id`; events that arrive first are kept.
Result<json::object> reply_to(ControlClient& client, std::int64_t id, std::vector<json::object>& early_events) {
  for (;;) {
    DESKD_ASSIGN_OR_RETURN(auto line, client.read());
    if (!line) return Error::make(ErrorCode::system, "deskd closed the connection.");
    const json::value* line_id = line->if_contains(field::kId);
    if (line->contains(field::kEvent)) {
      early_events.push_back(line->at(field::kEvent).as_object());
    } else if (line_id != nullptr && ((line_id->is_int64() && line_id->as_int64() == id) || line_id->is_null()) &&
               line->contains(field::kOk)) {
      return std::move(*line);
    }
  }
}

}  // namespace

int events(ControlClient& client, const DeskctlRequest& options) {
  const std::string& desk = options.desk;
  const std::string& from = options.from;
  const bool follow = options.follow;
  json::object request{{field::kId, 1}, {field::kOp, op::kFollow.name}, {field::kReplay, !follow || !from.empty()}};
  if (!desk.empty()) request[field::kDesk] = desk;
  if (!from.empty()) request[field::kFrom] = from;
  if (auto sent = client.send(request); !sent.ok()) return unreachable(sent.error());
  for (;;) {
    auto line = client.read();
    if (!line.ok()) return unreachable(line.error());
    if (!*line) return follow ? unreachable(Error::make(ErrorCode::system, "deskd closed the connection.")) : kOk;
    const json::object& object = **line;
    if (object.contains(field::kOk)) {
      if (!is_ok(object)) return refused(object, options.json_output);
      if (text_of(object, "replay_complete") == "false") {
        std::fprintf(stderr, "deskctl: older events are no longer kept in memory; the desk's journal has them all.\n");
      }
    } else if (object.contains("stopping")) {
      std::fprintf(stderr, "deskctl: %s\n", shown(object, "notice").c_str());
    } else if (object.contains("replayed")) {
      if (!follow) return kOk;
    } else if (object.contains("dropped")) {
      std::fprintf(stderr, "deskctl: %s events were dropped because this client fell behind.\n",
                   shown(object, "dropped").c_str());
    } else if (const json::value* event = object.if_contains(field::kEvent); event != nullptr && event->is_object()) {
      const std::string text =
          options.json_output ? json::serialize(*event) + "\n" : desk::event_text(event->as_object(), true);
      std::fputs(text.c_str(), stdout);
      std::fflush(stdout);
    }
  }
}

int ask(ControlClient& client, const DeskctlRequest& options) {
  const std::string& desk = options.desk;
  std::vector<json::object> pending;
  if (auto sent = client.send(json::object{{field::kId, 1}, {field::kOp, op::kFollow.name}, {field::kDesk, desk}});
      !sent.ok())
    return unreachable(sent.error());
  auto followed = reply_to(client, 1, pending);
  if (!followed.ok()) return unreachable(followed.error());
  if (!is_ok(*followed)) return refused(*followed, options.json_output);
  if (auto sent = client.send(json::object{
          {field::kId, 2}, {field::kOp, op::kSend.name}, {field::kDesk, desk}, {field::kText, joined(options.words)}});
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
    const bool about_ours =
        data_value != nullptr && data_value->is_object() && text_of(data_value->as_object(), "trigger") == trigger;
    if (about_ours && (kind == event_kind::kTurnStarted || kind == event_kind::kSteeringQueued)) mine = true;
    // The event-kind table says which kinds end a turn (a failed rollover's TURN_FAILED does not).
    const bool ends = about_ours && desk::ends_turn(kind, data_value->as_object());
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
    if (kind == event_kind::kTurnFailed || kind == event_kind::kTurnStopped || kind == event_kind::kBudgetReached) {
      return kRefused;
    }
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
    if (!*line)
      return unreachable(Error::make(ErrorCode::system, "deskd closed the connection before the turn ended."));
    if (const json::value* event = (*line)->if_contains(field::kEvent); event != nullptr && event->is_object()) {
      if (auto done = handle(event->as_object())) return *done;
    } else if ((*line)->contains(field::kOk) && !is_ok(**line)) {
      // deskd ended the follow: it is stopping, or found this client too slow.
      return refused(**line, options.json_output);
    } else if ((*line)->contains("stopping")) {
      std::fprintf(stderr, "deskctl: %s\n", shown(**line, "notice").c_str());
    } else if ((*line)->contains("dropped")) {
      std::fprintf(stderr, "deskctl: some events were dropped because this client fell behind.\n");
    }
  }
}

}  // namespace deskd::control::deskctl
