#pragma once
// Trigger: what wakes a desk — a user's message, a command, a schedule, or one of these
// re-delivered after a restart — addressed to one desk.

#include <boost/json/fwd.hpp>

#include <chrono>
#include <optional>
#include <string>

#include "base/result.h"

namespace deskd::desk {

struct Trigger {
  enum class Source { user, schedule };
  /// How the desk handles it: a command is answered by code, a message goes to the model.
  /// Journaled, so that a re-delivered /pause is a command again, not text for the model.
  enum class Kind { message, command };
  std::string id;        ///< unique; "t-" + 16 hex digits (make_trigger_id)
  std::string desk;      ///< the desk it is addressed to
  Source source = Source::user;
  std::string text;      ///< the message, or the schedule's prompt
  std::string sender;    ///< who sent a user message ("" when unknown)
  std::string schedule;  ///< the schedule's name, for Source::schedule
  std::chrono::system_clock::time_point received{};
  /// For Source::schedule: the firing's planned time. Journaled, so that a restart knows
  /// which firings ran (a catch-up never fires one twice); nullopt on older lines.
  std::optional<std::chrono::system_clock::time_point> due = std::nullopt;
  bool redelivered = false;  ///< accepted before a restart and never finished
  bool queued_explicitly = false;  ///< sent with /queue: waits for the next turn, never steers
  /// Set when the desk accepts it (from the text: '/' starts a command); nullopt for a
  /// trigger read from a journal line written before the field existed.
  std::optional<Kind> kind = std::nullopt;
  /// Why it was re-delivered ("its turn was interrupted"), for the model's context line.
  /// Not journaled: the journal's TRIGGER_REDELIVERED event says it.
  std::string redelivery_reason = {};
};

/// The kind a new trigger with this text has: a command when it starts with '/'.
Trigger::Kind kind_of_text(const std::string& text);

/// A fresh trigger id.
std::string make_trigger_id();

/// The trigger as a JSON object, and back; from_json refuses missing or mistyped fields
/// ("kind" may be missing: a line written before it existed).
boost::json::object to_json(const Trigger& trigger);
Result<Trigger> trigger_from_json(const boost::json::object& object);

}  // namespace deskd::desk
