#include "runner/journal/journal_scan.h"

#include <boost/json.hpp>

#include "runner/events/event.h"
#include "runner/journal/journal_salvage.h"

namespace deskd::desk {
namespace {

namespace json = boost::json;

constexpr std::size_t kFragmentCharacters = 200;
constexpr const char* kStoppedWithTheDesk = "the desk stopped";  // TURN_STOPPED's reason when deskd stops

std::string string_at(const json::object& object, std::string_view key) {
  const json::value* value = object.if_contains(key);
  return value != nullptr && value->is_string() ? std::string(value->get_string()) : std::string();
}

// Whether a TURN_STOPPED says deskd stopped (its reason "the desk stopped", or unknown).
bool stopped_with_the_desk(const json::object* data) {
  const std::string reason = data != nullptr ? string_at(*data, "reason") : std::string();
  return reason.empty() || reason == kStoppedWithTheDesk;
}

std::string fragment(std::string text) {
  if (text.size() <= kFragmentCharacters) return text;
  std::size_t end = kFragmentCharacters;
  while (end > 0 && (static_cast<unsigned char>(text[end]) & 0xC0) == 0x80) --end;  // whole characters
  text.resize(end);
  return text + "...";
}

}  // namespace

JournalScan::Open* JournalScan::find(const std::string& trigger) {
  if (trigger.empty()) return nullptr;
  const auto sequence = sequence_of_.find(trigger);
  return sequence == sequence_of_.end() ? nullptr : &open_.at(sequence->second);
}

void JournalScan::take_line(std::string_view line) {
  ++line_number_;
  if (line.find_first_not_of(" \t\r") == std::string_view::npos) return;
  boost::system::error_code error;
  const json::value value = json::parse(line, error);
  if (error) {
    const bool torn = error == json::error::incomplete;
    damaged_line(torn ? "the line ends before its event does: a crash or a full disk cut it short"
                      : "the line is not JSON (" + error.message() + ")",
                 torn, salvage_text(line));
    return;
  }
  const json::object* object = value.if_object();
  const json::value* kind = object != nullptr ? object->if_contains("kind") : nullptr;
  const json::value* data = object != nullptr ? object->if_contains("data") : nullptr;
  if (kind == nullptr || !kind->is_string() || data == nullptr || !data->is_object()) {
    damaged_line(object == nullptr ? "the line is JSON but not an event" : "the event has no \"kind\" or no \"data\" object",
                 false, object != nullptr ? salvage_object(*object) : SalvagedLine{});
    return;
  }
  const std::string id = string_at(*object, "id");
  if (const auto number = event_sequence_number(id)) highest_event_number_ = std::max(highest_event_number_, *number);
  const std::string kind_text(kind->get_string());
  const json::object& fields = data->get_object();
  if (kind_text == event_kind::kTriggerAccepted) {
    Result<Trigger> trigger = trigger_from_json(fields);
    if (!trigger.ok()) {
      damaged_line("its trigger cannot be read: " + trigger.error().what, false, salvage_object(*object));
      return;
    }
    accept(OpenTrigger{.trigger = std::move(trigger).value(), .accepted_event = id}, line);
  } else {
    const std::string trigger = string_at(fields, "trigger");
    if (kind_text == event_kind::kTriggerFinished && trigger.empty()) {
      damaged_line("the TRIGGER_FINISHED event names no trigger", false, salvage_object(*object));
      return;
    }
    if (kind_text == event_kind::kDeskPaused || kind_text == event_kind::kDeskResumed) {
      pause_switch_ = PauseSwitch{.paused = kind_text == event_kind::kDeskPaused,
                                  .event = (id.empty() ? std::string("an unnumbered") : id) + " " + kind_text};
      if (keep_) pause_line_.emplace(line_number_, std::string(line));
    }
    event(line, id, kind_text, trigger, &fields);
  }
  if (keep_) {
    tail_.emplace_back(line_number_, std::string(line));
    tail_bytes_ += line.size();
    while (tail_.size() > 1 && (tail_.size() > keep_->events || tail_bytes_ > keep_->bytes)) {
      tail_bytes_ -= tail_.front().second.size();
      tail_.pop_front();
    }
  }
}

void JournalScan::accept(OpenTrigger trigger, std::string_view line) {
  const std::string id = trigger.trigger.id;
  std::uint64_t sequence = next_sequence_;
  if (const auto found = sequence_of_.find(id); found != sequence_of_.end()) {
    // Accepted again (a re-delivery journaled after a restart): keep its first place and
    // its progress, take its latest form.
    sequence = found->second;
    open_.at(sequence).state.trigger = std::move(trigger.trigger);
  } else {
    sequence_of_.emplace(id, next_sequence_++);
    open_.emplace(sequence, Open{.state = std::move(trigger)});
  }
  Open& open = open_.at(sequence);
  if (keep_) {
    open.lines.push_back(line_number_);
    trigger_lines_[line_number_] = std::string(line);
  }
}

void JournalScan::event(std::string_view line, const std::string& id, const std::string& kind, const std::string& trigger,
                        const json::object* data) {
  Open* open = find(trigger);
  if (open == nullptr) return;
  if (kind == event_kind::kTriggerFinished) {
    if (open->state.damaged_line && open->damage_index < damaged_.size()) {
      damaged_[open->damage_index].recovered = "its trigger " + trigger + " was read from it, and finished later: nothing was lost";
    }
    for (std::size_t kept : open->lines) trigger_lines_.erase(kept);
    if (running_ == trigger) running_.clear();
    const std::uint64_t sequence = sequence_of_.at(trigger);
    sequence_of_.erase(trigger);
    open_.erase(sequence);
    return;
  }
  if (keep_ && !line.empty()) {
    open->lines.push_back(line_number_);
    trigger_lines_[line_number_] = std::string(line);
  }
  OpenTrigger& state = open->state;
  const std::string how = (id.empty() ? std::string("an unnumbered") : id) + " " + kind;
  if (kind == event_kind::kTurnStarted) {
    state.progress = OpenTrigger::Progress::started;
    state.progress_event = how;
    running_ = trigger;
  } else if (kind == event_kind::kSteeringDelivered) {
    state.progress = OpenTrigger::Progress::started;
    state.progress_event = how;
    if (Open* turn = find(running_)) turn->steered_by_it.push_back(trigger);
  } else if (kind == event_kind::kTurnStopped && stopped_with_the_desk(data)) {
    // The second question a restart asks: the turn ended, but only because deskd stopped
    // (or, of a damaged line, that is what it may have been), so the trigger runs again.
    state.progress = OpenTrigger::Progress::stopped;
    state.progress_event = how;
  } else if (data != nullptr ? ends_turn(kind, *data) : turn_end_of(kind) == TurnEnd::yes) {
    // As the event-kind table says. Of a damaged line it is unknown whether a TURN_FAILED
    // was a failed rollover's (which ends nothing), so it ends nothing either.
    end(*open, how);
  } else if (kind == event_kind::kTriggerRedelivered) {
    state.progress = OpenTrigger::Progress::waiting;
    state.progress_event = how;
    open->steered_by_it.clear();
  }
}

void JournalScan::end(Open& open, const std::string& how) {
  open.state.progress = OpenTrigger::Progress::ended;
  open.state.progress_event = how;
  // Steering delivered into the turn was handled by it.
  for (const std::string& steering : open.steered_by_it) {
    if (Open* steered = find(steering)) {
      steered->state.progress = OpenTrigger::Progress::ended;
      steered->state.progress_event = how + " of the turn it steered";
    }
  }
  open.steered_by_it.clear();
  if (running_ == open.state.trigger.id) running_.clear();
}

void JournalScan::damaged_line(std::string problem, bool torn, const SalvagedLine& salvaged) {
  DamagedLine damaged{.line = line_number_, .problem = std::move(problem), .kind = salvaged.kind,
                      .trigger = salvaged.trigger(), .recovered = {}};
  if (const auto number = event_sequence_number(salvaged.event_id)) {
    highest_event_number_ = std::max(highest_event_number_, *number);
  }
  ++damaged_count_;
  const bool kept = damaged_.size() < kMaximumDamagedKept;
  if (salvaged.kind == event_kind::kTriggerAccepted) {
    std::optional<Trigger> trigger = salvaged_trigger(salvaged);
    const auto cut_text = salvaged.cut_data.find("text");
    if (trigger && !torn) {
      damaged.recovered = "its trigger " + trigger->id + " was read whole from it and is handled as if the line were whole";
      OpenTrigger open{.trigger = *trigger, .accepted_event = salvaged.event_id, .damaged_line = line_number_};
      accept(std::move(open), {});
      Open& added = open_.at(sequence_of_.at(trigger->id));
      added.damage_index = kept ? damaged_.size() : kMaximumDamagedKept;
      if (keep_) {
        // Kept as a whole line, so that the rewritten journal is not damaged any more.
        Event repaired{.id = salvaged.event_id, .time = salvaged.time, .desk = trigger->desk, .kind = event_kind::kTriggerAccepted,
                       .data = to_json(*trigger)};
        trigger_lines_[line_number_] = json::serialize(to_json(repaired));
      }
    } else if (!damaged.trigger.empty() || trigger || cut_text != salvaged.cut_data.end()) {
      std::string text = trigger ? trigger->text : cut_text != salvaged.cut_data.end() ? cut_text->second + " [cut off]" : "";
      damaged.recovered = "its trigger " + (damaged.trigger.empty() ? std::string("(id unreadable)") : damaged.trigger) +
                          " is not run: " +
                          (torn ? "a trigger is acknowledged only once its whole line is on disk, so its sender was "
                                  "told it failed or got no answer. "
                                : "its line cannot be trusted. ") +
                          "What survived of its text: \"" + fragment(text) + "\"";
    }
  } else if (!salvaged.kind.empty() && !damaged.trigger.empty()) {
    // A torn TRIGGER_FINISHED still finishes its trigger; a torn TURN_STARTED still says
    // the turn began.
    if (find(damaged.trigger) != nullptr) {
      event({}, salvaged.event_id, salvaged.kind, damaged.trigger, nullptr);
      damaged.recovered = "read as " + salvaged.kind + " of trigger " + damaged.trigger;
    }
  }
  if (kept) damaged_.push_back(std::move(damaged));
}

std::vector<OpenTrigger> JournalScan::open_triggers() const {
  std::vector<OpenTrigger> triggers;
  triggers.reserve(open_.size());
  for (const auto& [sequence, open] : open_) triggers.push_back(open.state);
  return triggers;
}

std::vector<std::string> JournalScan::kept_lines() const {
  std::map<std::size_t, const std::string*> ordered;
  for (const auto& [line, text] : trigger_lines_) ordered.emplace(line, &text);
  for (const auto& [line, text] : tail_) ordered.emplace(line, &text);
  if (pause_line_) ordered.emplace(pause_line_->first, &pause_line_->second);
  std::vector<std::string> lines;
  lines.reserve(ordered.size());
  for (const auto& [line, text] : ordered) lines.push_back(*text);
  return lines;
}

}  // namespace deskd::desk
