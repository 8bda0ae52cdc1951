#pragma once
// How much of the model's context window a request takes when the server does not say (an
// OpenAI-compatible server that sends no usage) or says something implausibly small (one
// that under-reports), and how a transcript is cut down to a byte budget when summarising
// alone cannot bound it (one huge tool result, a summary that failed).

#include <boost/json/array.hpp>

#include <cstddef>
#include <cstdint>
#include <string>

#include "runner/model/model_provider.h"

namespace deskd::model {

/// Bytes of a serialized request counted as one token (see context_budget.cpp for why 4).
inline constexpr std::uint64_t kBytesPerToken = 4;

/// The bytes of `messages` as JSON text.
std::size_t messages_bytes(const boost::json::array& messages);
/// The bytes of a request as JSON text: system prompt, messages and tool definitions.
std::size_t request_bytes(const ModelRequest& request);
/// The tokens `bytes` of request are estimated to take (rounded up).
std::uint64_t estimated_tokens(std::size_t bytes);

/// The input tokens a request is taken to have used.
struct InputCount {
  std::uint64_t tokens = 0;
  /// True when the server's count was missing or implausibly small and the estimate was used.
  bool estimated = false;
};

/// The server's count (input plus cache tokens) when it sent one that fits the request's
/// size; else the larger of it and `estimate` (the tokens estimated from the request sent).
InputCount counted_input(const ModelResponse& response, std::uint64_t estimate);

/// Cuts the longest texts of `messages` — text blocks, tool results, string arguments of
/// tool calls; never thinking blocks, whose signature covers them — keeping each one's
/// start and end around a marker and no fewer than `floor_bytes` of it, longest first,
/// until the messages take at most `budget_bytes` or nothing is left to cut. Returns how
/// many texts were cut. A text that starts like `spared` (the turn's own message) is left
/// whole; empty: none is.
std::size_t cut_longest_texts(boost::json::array& messages, std::size_t budget_bytes, std::size_t floor_bytes,
                              const std::string& spared = {});

/// Whether a text block of `messages` starts with `text`'s beginning (a text that was
/// cut by cut_longest_texts still counts as kept).
bool holds_text(const boost::json::array& messages, const std::string& text);

}  // namespace deskd::model
