#pragma once
// Reading one MCP message (one JSON-RPC line) the way a client needs it read:
//
// - ids and progress tokens are kept as the exact text the client sent (`1.5`, `-0`,
//   `1180591620717411303424`), so they are echoed byte for byte rather than rewritten by a
//   round trip through a double;
// - text that cannot be JSON as it stands but is meant as a message is repaired rather than
//   refused: a lone UTF-16 surrogate escape (`"\ud800"`, text cut mid-emoji) becomes U+FFFD,
//   and so does every byte that is not UTF-8 (as JavaScript's decoder does);
// - nesting deeper than kMaximumDepth is refused with an error naming the limit, and the id
//   is still found (wherever it sits at the top level), so the client can be answered.

#include <boost/json/value.hpp>

#include <cstddef>
#include <optional>
#include <string>

namespace deskd::tools {

struct McpMessage {
  static constexpr std::size_t kMaximumDepth = 64;

  /// The parsed message; null when `error` is set.
  boost::json::value value;
  /// Why the text is not a message we take (a sentence); empty when it parsed.
  std::string error;
  /// The exact JSON text of the top-level "id" when it is a string or a number, also when
  /// the message as a whole was refused; nullopt otherwise.
  std::optional<std::string> raw_id;
  /// The exact JSON text of params.requestId (notifications/cancelled), when a string or number.
  std::optional<std::string> raw_request_id;
  /// The exact JSON text of params._meta.progressToken, when a string or a number.
  std::optional<std::string> raw_progress_token;
};

/// Reads one message. Never throws on bad input: `error` says what is wrong.
McpMessage read_mcp_message(std::string text);

/// A key for matching request ids: strings by their value, numbers by their text as sent
/// (`raw` is the id's JSON text, as in McpMessage).
std::string request_id_key(const std::string& raw);

}  // namespace deskd::tools
