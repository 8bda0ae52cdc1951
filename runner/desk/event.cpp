#include "runner/desk/event.h"

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

}  // namespace deskd::desk
