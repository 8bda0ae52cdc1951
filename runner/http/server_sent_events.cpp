#include "runner/http/server_sent_events.h"

#include <utility>

namespace deskd::model {

namespace {

constexpr std::string_view kByteOrderMark = "\xEF\xBB\xBF";

}  // namespace

Result<void> ServerSentEventParser::feed(std::string_view piece) {
  for (char character : piece) {
    // A \r\n pair may be split across two pieces; the \r already ended the line.
    if (skip_line_feed_) {
      skip_line_feed_ = false;
      if (character == '\n') continue;
    }
    if (character == '\r' || character == '\n') {
      skip_line_feed_ = character == '\r';
      take_line();
      continue;
    }
    line_.push_back(character);
    // The line and the data gathered so far are what a single event holds in memory.
    if (line_.size() + current_.data.size() + current_.event.size() > maximum_event_bytes_) {
      line_.clear();
      current_ = ServerSentEvent{};
      current_has_data_ = false;
      return Error::make(ErrorCode::invalid_argument,
                         "A server-sent event grew past " + std::to_string(maximum_event_bytes_) + " bytes.");
    }
  }
  return success();
}

void ServerSentEventParser::take_line() {
  std::string line = std::move(line_);
  line_.clear();
  if (first_line_) {
    first_line_ = false;
    // The standard ignores one byte order mark at the start of the stream.
    if (line.starts_with(kByteOrderMark)) line.erase(0, kByteOrderMark.size());
  }
  if (line.empty()) {
    // Per the standard, an event without any data line is dropped, name and all.
    if (current_has_data_) ready_.push_back(std::move(current_));
    current_ = ServerSentEvent{};
    current_has_data_ = false;
    return;
  }
  if (line.front() == ':') return;  // a comment (servers send them as keep-alives)

  std::string_view field = line;
  std::string_view value;
  if (auto colon = field.find(':'); colon != std::string_view::npos) {
    value = field.substr(colon + 1);
    field = field.substr(0, colon);
    if (value.starts_with(' ')) value.remove_prefix(1);
  }
  if (field == "event") {
    current_.event.assign(value);
  } else if (field == "data") {
    if (current_has_data_) current_.data.push_back('\n');
    current_.data.append(value);
    current_has_data_ = true;
  }
  // "id", "retry" and unknown fields are ignored: the model APIs do not resume streams.
}

std::optional<ServerSentEvent> ServerSentEventParser::next() {
  if (ready_.empty()) return std::nullopt;
  ServerSentEvent event = std::move(ready_.front());
  ready_.pop_front();
  return event;
}

void ServerSentEventParser::finish() {
  if (!line_.empty()) take_line();
  // The blank line that would have ended the event: the event goes out if it has data.
  take_line();
  skip_line_feed_ = false;
}

bool ServerSentEventParser::has_partial_event() const {
  return !line_.empty() || current_has_data_ || !current_.event.empty();
}

}  // namespace deskd::model
