#include "runner/events/event.h"

#include <boost/json.hpp>

#include <charconv>

namespace deskd::desk {

namespace {

// A node's own size and what it points to. Short strings live inside the node; a rough
// figure is enough: the caps are there to stop gigabytes, not to count bytes exactly.
std::size_t json_bytes(const boost::json::value& value) {
  constexpr std::size_t kNodeBytes = sizeof(boost::json::value);
  switch (value.kind()) {
    case boost::json::kind::string: return kNodeBytes + value.get_string().size();
    case boost::json::kind::array: {
      std::size_t total = kNodeBytes;
      for (const auto& element : value.get_array()) total += json_bytes(element);
      return total;
    }
    case boost::json::kind::object: {
      std::size_t total = kNodeBytes;
      for (const auto& member : value.get_object()) total += member.key().size() + json_bytes(member.value());
      return total;
    }
    default: return kNodeBytes;
  }
}

}  // namespace

std::size_t approximate_bytes(const Event& event) {
  std::size_t total = sizeof(Event) + event.id.size() + event.time.size() + event.desk.size() + event.kind.size();
  for (const auto& member : event.data) total += member.key().size() + json_bytes(member.value());
  return total;
}

boost::json::object to_json(const Event& event) {
  // Fields in a fixed order, so that a journal line reads the same way every time.
  boost::json::object object;
  object["id"] = event.id;
  object["time"] = event.time;
  object["desk"] = event.desk;
  object["kind"] = event.kind;
  object["data"] = event.data;
  return object;
}

Result<Event> event_from_json(const boost::json::object& object) {
  Event event;
  for (auto [field, target] : {std::pair{"id", &event.id}, std::pair{"time", &event.time},
                               std::pair{"desk", &event.desk}, std::pair{"kind", &event.kind}}) {
    const boost::json::value* value = object.if_contains(field);
    if (value == nullptr || !value->is_string()) {
      return Error::make(ErrorCode::invalid_argument,
                         "The event's \"" + std::string(field) + "\" is missing or is not a string.");
    }
    *target = std::string(value->get_string());
  }
  const boost::json::value* data = object.if_contains("data");
  if (data == nullptr || !data->is_object()) {
    return Error::make(ErrorCode::invalid_argument, "The event's \"data\" is missing or is not an object.");
  }
  event.data = data->get_object();
  return event;
}

std::optional<std::uint64_t> event_sequence_number(std::string_view id) {
  if (!id.starts_with("e-") || id.size() == 2) return std::nullopt;
  std::uint64_t number = 0;
  const auto [end, error] = std::from_chars(id.data() + 2, id.data() + id.size(), number);
  if (error != std::errc{} || end != id.data() + id.size()) return std::nullopt;
  return number;
}

}  // namespace deskd::desk
