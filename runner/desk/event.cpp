#include "runner/desk/event.h"

#include <boost/json.hpp>

#include <charconv>

namespace deskd::desk {

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
