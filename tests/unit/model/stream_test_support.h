#pragma once
// Helpers for the stream assembler tests: the wire text of events, fed through the real
// server-sent event parser in pieces of a chosen size, as the network would cut them.

#include <boost/json/object.hpp>
#include <boost/json/serialize.hpp>
#include <gtest/gtest.h>

#include <optional>
#include <ostream>
#include <string>
#include <string_view>

#include "runner/http/server_sent_events.h"
#include "runner/model/retry.h"
#include "runner/model/streamed_call.h"

namespace boost::json {
// GoogleTest prints a failed comparison of JSON as JSON, not as bytes.
inline void PrintTo(const object& shown, std::ostream* out) { *out << serialize(shown); }
inline void PrintTo(const value& shown, std::ostream* out) { *out << serialize(shown); }
inline void PrintTo(const array& shown, std::ostream* out) { *out << serialize(shown); }
}  // namespace boost::json

namespace deskd::model::testing {

/// One event on the wire: "event: NAME\ndata: DATA\n\n" (no event line when `name` is "").
inline std::string sse(std::string_view name, std::string_view data) {
  std::string text;
  if (!name.empty()) text += "event: " + std::string(name) + "\n";
  return text + "data: " + std::string(data) + "\n\n";
}

/// Feeds `wire` to `assembler` in pieces of `piece_size` bytes and returns its reply.
/// `wire` is a whole body that ended cleanly, as streamed_call treats one: a last event
/// without its blank line (as the SDKs' recorded fixtures end) is complete. Throws what the
/// assembler throws.
inline ModelResponse assemble(StreamAssembler& assembler, std::string_view wire, std::size_t piece_size) {
  ServerSentEventParser parser;
  for (std::size_t at = 0; at < wire.size(); at += piece_size) {
    const Result<void> fed = parser.feed(wire.substr(at, piece_size));
    if (!fed.ok()) ADD_FAILURE() << fed.error().what;
    while (std::optional<ServerSentEvent> event = parser.next()) assembler.take(*event);
  }
  if (!assembler.finished()) {
    parser.finish();
    while (std::optional<ServerSentEvent> event = parser.next()) assembler.take(*event);
  }
  return assembler.finish();
}

/// The ProviderError that assembling `wire` throws; fails the test when it throws none.
template <typename Assembler>
std::optional<ProviderError> failure_of(Assembler assembler, std::string_view wire) {
  try {
    assemble(assembler, wire, wire.size() + 1);
  } catch (const ProviderError& error) {
    return error;
  }
  ADD_FAILURE() << "the stream was accepted";
  return std::nullopt;
}

}  // namespace deskd::model::testing
