#pragma once
// Trigger: what wakes a desk — a user's message, a schedule, or a message re-delivered
// after a restart — addressed to one desk.

#include <boost/json/fwd.hpp>

#include <chrono>
#include <optional>
#include <string>

#include "base/result.h"

namespace deskd::desk {

struct Trigger {
  enum class Source { user, schedule };
  std::string id;        ///< unique; "t-" + 16 hex digits (make_trigger_id)
  std::string desk;      ///< the desk it is addressed to
  Source source = Source::user;
  std::string text;      ///< the message, or the schedule's prompt
  std::string sender;    ///< who sent a user message ("" when unknown)
  std::string schedule;  ///< the schedule's name, for Source::schedule
  std::chrono::system_clock::time_point received{};
  bool redelivered = false;  ///< accepted before a restart and never finished
  bool queued_explicitly = false;  ///< sent with /queue: waits for the next turn, never steers
};

/// A fresh trigger id.
std::string make_trigger_id();

/// The trigger as a JSON object, and back; from_json refuses missing or mistyped fields.
boost::json::object to_json(const Trigger& trigger);
Result<Trigger> trigger_from_json(const boost::json::object& object);

}  // namespace deskd::desk
