#pragma once
// What survives of a damaged journal line. A line torn by a crash or a full disk is the
// start of an event; one garbled on disk is not JSON at all; one edited by hand may be JSON
// with a field missing. Its kind, its event id, the trigger it names and a trigger's text
// can often still be read: a journal line is written without spaces and a quote inside a
// string is always escaped, so "kind":" can only ever be a key.

#include <boost/json/object.hpp>

#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "runner/events/trigger.h"

namespace deskd::desk {

struct SalvagedLine {
  std::string event_id;  ///< "e-12", or "" when unreadable
  std::string time;
  std::string desk;
  std::string kind;      ///< "TRIGGER_ACCEPTED", or "" when unreadable
  /// The string fields of "data" that could be read whole ("trigger", "id", "text", ...).
  std::map<std::string, std::string, std::less<>> data;
  /// Fields of "data" whose string was cut off, with what survived of it.
  std::map<std::string, std::string, std::less<>> cut_data;

  /// The trigger a line names: data.trigger, or data.id of a TRIGGER_ACCEPTED.
  std::string trigger() const;
};

/// Reads what it can of a line that is not JSON.
SalvagedLine salvage_text(std::string_view line);

/// Reads what it can of a JSON object that is not a well-formed event.
SalvagedLine salvage_object(const boost::json::object& object);

/// The trigger of a damaged TRIGGER_ACCEPTED line, when its id and its whole text survive;
/// fields that did not survive take their defaults (a user message, received now unknown).
std::optional<Trigger> salvaged_trigger(const SalvagedLine& line);

}  // namespace deskd::desk
