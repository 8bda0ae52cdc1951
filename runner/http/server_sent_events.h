#pragma once
// Server-sent events (the text/event-stream format both model APIs stream in): fed the
// body in arbitrary pieces, hands back whole events. Lines end in \n, \r\n or \r; "event:"
// names the event, "data:" lines join with \n, a blank line ends the event, ":" lines are
// comments. Memory is bounded: an event past the limit is an error, not a growing buffer.

#include <cstddef>
#include <deque>
#include <optional>
#include <string>
#include <string_view>

#include "base/result.h"

namespace deskd::model {

struct ServerSentEvent {
  std::string event;  ///< "" when the event named none ("message" by the standard)
  std::string data;
};

class ServerSentEventParser {
 public:
  explicit ServerSentEventParser(std::size_t maximum_event_bytes = std::size_t{8} << 20)
      : maximum_event_bytes_(maximum_event_bytes) {}

  /// Adds a piece of the body. Fails when one event grows past the limit.
  Result<void> feed(std::string_view piece);
  /// The next complete event, if one is ready.
  std::optional<ServerSentEvent> next();
  /// Whether a partial event is waiting for more input.
  bool has_partial_event() const;
  /// The body has ended cleanly: a last line without its line ending, and a last event
  /// without its closing blank line, are complete (servers that close the stream right
  /// after the final event's data). Only call it when the body's end was not a cut.
  void finish();

 private:
  void take_line();

  std::size_t maximum_event_bytes_;
  std::string line_;              // the line being read
  bool skip_line_feed_ = false;   // the last piece ended in \r
  bool first_line_ = true;        // a byte order mark may start it
  ServerSentEvent current_;
  bool current_has_data_ = false;
  std::deque<ServerSentEvent> ready_;
};

}  // namespace deskd::model
