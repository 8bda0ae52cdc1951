#pragma once
// The chat-completions API's streamed reply (OpenAI, and the servers that speak its
// dialect: Ollama, llama.cpp, vLLM), assembled into a ModelResponse. No I/O: fed one
// server-sent event at a time, each `data: {chunk}` or the closing `data: [DONE]`.

#include <boost/json/value.hpp>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "runner/model/streamed_call.h"

namespace deskd::model {

/// The API's error in an error body or a chunk: {"error": {"message", "type", "code"}}, or
/// {"error": "..."} as some local servers send it; nullopt when `value` is not that shape.
/// server_error is transient; context_length_exceeded (or a message about the maximum
/// context length) marks a conversation past the window.
std::optional<ApiFailure> read_openai_error(const boost::json::value& value);
/// The same, from text that should hold such a body.
std::optional<ApiFailure> read_openai_error_body(std::string_view body);

class OpenAiStreamAssembler final : public StreamAssembler {
 public:
  /// `service` names the server in messages; `max_tokens` is the request's limit.
  OpenAiStreamAssembler(std::string service, std::uint32_t max_tokens)
      : service_(std::move(service)), max_tokens_(max_tokens) {}

  /// Takes a chunk: delta.content is text, delta.refusal the model's refusal,
  /// delta.reasoning_content (or delta.reasoning) a compatible server's reasoning,
  /// delta.tool_calls pieces join by their index, finish_reason and usage are kept. Throws
  /// ProviderError for an error chunk, one that is not JSON, and a reply past 32 MiB.
  void take(const ServerSentEvent& event) override;
  bool finished() const override { return done_; }
  /// The reply, with finish_reason in the Messages API's words (stop -> end_turn,
  /// tool_calls -> tool_use, length -> max_tokens), and usage_reported false when no chunk
  /// carried usage; with reasoning, `content` holds a reasoning_content block first, then
  /// the text and the tool calls. Throws ProviderError when the stream ended before [DONE]
  /// and before any finish_reason (retryable: it was cut), and, billed with the reply's
  /// usage (ProviderError::billed), for a refusal (quoting its words) or a content_filter
  /// stop (both refused()), and when a tool call's arguments are not a JSON object (naming
  /// the tool, or max_tokens when the reply was cut by it).
  ModelResponse finish() override;

 private:
  struct PendingCall {
    std::string id;
    std::string name;
    std::string arguments;  // the pieces, joined
  };

  void take_usage(const boost::json::object& usage);
  void take_tool_call(const boost::json::value& piece, std::uint64_t position);
  /// Counts `bytes` more of the reply; throws past the limit.
  void grow(std::size_t bytes);

  std::string service_;
  std::uint32_t max_tokens_;
  std::map<std::uint64_t, PendingCall> calls_;  // by the API's index: the reply's order
  std::string finish_reason_;
  std::string refusal_;    // the delta.refusal pieces, joined
  std::string reasoning_;  // the delta.reasoning_content pieces, joined
  std::size_t reply_bytes_ = 0;
  bool usage_seen_ = false;
  ModelResponse response_;
  bool done_ = false;
};

}  // namespace deskd::model
