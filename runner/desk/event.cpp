#include "runner/desk/event.h"

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

}  // namespace deskd::desk
