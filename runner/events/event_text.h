#pragma once
// Events for people: one readable line (or a few, for tool output) per event, as deskctl
// prints them. Scripts use --json and get the events as they are.

#include <boost/json/object.hpp>

#include <string>

namespace deskd::desk {

/// The event (as JSON: {"id","time","desk","kind","data"}) in a few lines, each ending in
/// "\n"; "" for bookkeeping events a person does not need (TRIGGER_ACCEPTED, ...), unless
/// `everything`.
std::string event_text(const boost::json::object& event, bool everything = false);

}  // namespace deskd::desk
