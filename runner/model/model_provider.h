#pragma once
// ModelProvider: one call to a model. Messages are provider-neutral JSON, in the shape the
// transcript keeps:
//   {"role": "user"|"assistant", "content": [blocks]} with blocks
//   {"type": "text", "text"}, {"type": "tool_use", "id", "name", "input"},
//   {"type": "tool_result", "tool_use_id", "content", "is_error"};
// and, from the anthropic provider only, blocks kept exactly as its API sent them, to be
// sent back unchanged: {"type": "thinking", "thinking", "signature"},
// {"type": "redacted_thinking", "data"}, {"type": "server_tool_use", ...},
// {"type": "web_search_tool_result", ...} and other server tool results; from the openai
// provider's chat completions, a compatible server's reasoning
// {"type": "reasoning_content", "text"}; from its Responses API, a reasoning item
// {"type": "openai_reasoning", "item": {"type": "reasoning", "summary", "encrypted_content"}}.
// Each provider (anthropic, openai, script) translates them to its own wire format and
// passes over the blocks of another API.

#include <boost/asio/awaitable.hpp>
#include <boost/json/array.hpp>
#include <boost/json/object.hpp>

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "runner/desk/usage_tracker.h"

namespace deskd::model {

/// The transcript's block types of the openai provider's reasoning (see above).
inline constexpr std::string_view kReasoningContentBlock = "reasoning_content";
inline constexpr std::string_view kOpenAiReasoningBlock = "openai_reasoning";

/// A tool the model may call.
struct ToolSpec {
  std::string name;
  std::string description;
  boost::json::object input_schema;
};

/// What the call is for; the script provider answers side questions and summaries
/// without spending a scripted turn.
enum class Purpose { turn, side_question, summary };

struct ModelRequest {
  std::string system;
  boost::json::array messages;
  std::vector<ToolSpec> tools;
  Purpose purpose = Purpose::turn;
  /// Called whenever a piece of the reply arrives (may be empty): a long reply that is
  /// still streaming is progress, not a stalled turn.
  std::function<void()> on_progress;
  /// Told each failure the provider will retry (a 429, an overloaded server), as a
  /// sentence without secrets, so the user sees why the turn waits.
  std::function<void(const std::string&)> on_retry;
};

struct ToolCall {
  std::string id;
  std::string name;
  boost::json::object input;
};

struct ModelResponse {
  std::string text;
  std::vector<ToolCall> tool_calls;
  /// The reply's blocks in the API's order, as the transcript keeps them (thinking first,
  /// then text and tool_use), when the provider has blocks beyond text and tool calls to
  /// pass back; empty: the transcript is built from `text` and `tool_calls`.
  boost::json::array content;
  desk::Usage usage;
  /// False when the server sent no token counts (an OpenAI-compatible server that ignores
  /// stream_options): `usage` is then zero, and the request is filed as of unknown usage.
  bool usage_reported = true;
  std::string model;  ///< the model that answered, for usage and cost
  /// Why the model stopped, in the Messages API's words: "end_turn", "tool_use",
  /// "max_tokens" and "model_context_window_exceeded" (the reply was cut: see
  /// is_cut_reply), "pause_turn" (a long turn paused: ask again with this reply in the
  /// transcript to let it go on); "" when the provider does not say. A refusal is not a
  /// reply: the provider throws a ProviderError quoting the model's words, marked refused()
  /// and carrying the usage the reply was billed (ProviderError::billed, retry.h).
  std::string stop_reason;
};

/// Whether `stop_reason` says the reply was cut by a limit rather than finished: the
/// request's max_tokens, or the model's context window.
inline bool is_cut_reply(std::string_view stop_reason) {
  return stop_reason == "max_tokens" || stop_reason == "model_context_window_exceeded";
}

class ModelProvider {
 public:
  virtual ~ModelProvider() = default;
  /// Asks the model once. Throws on failure (with a sentence a person can act on).
  virtual boost::asio::awaitable<ModelResponse> complete(ModelRequest request) = 0;
  /// The provider's name and model, e.g. "script", "anthropic:claude-...".
  virtual std::string describe() const = 0;
};

}  // namespace deskd::model
