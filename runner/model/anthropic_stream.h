#pragma once
// The Anthropic Messages API's streamed reply, assembled into a ModelResponse. No I/O:
// fed one server-sent event at a time (message_start, content_block_start/_delta/_stop,
// message_delta, message_stop, ping, error), in any pieces the network delivered them.

#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "runner/model/streamed_call.h"

namespace deskd::model {

/// "The Anthropic API", the subject of the provider's messages.
inline constexpr std::string_view kAnthropicService = "The Anthropic API";

/// The API's error in an error body or an `error` event, {"type":"error","error":
/// {"type","message"}}; nullopt when `value` is not that shape. overloaded_error and
/// api_error are transient; "prompt is too long" marks a conversation past the window.
std::optional<ApiFailure> read_anthropic_error(const boost::json::value& value);
/// The same, from text that should hold such a body.
std::optional<ApiFailure> read_anthropic_error_body(std::string_view body);

class AnthropicStreamAssembler final : public StreamAssembler {
 public:
  /// `max_tokens` is the request's limit, named when a reply is cut by it.
  explicit AnthropicStreamAssembler(std::uint32_t max_tokens) : max_tokens_(max_tokens) {}

  /// Throws ProviderError for an error event (retryable when overloaded), an event that
  /// is not JSON, a delta for a block that never started, and a reply past 32 MiB.
  /// Unknown event types are skipped, as the API asks. Blocks: text and tool_use become
  /// the reply; thinking (thinking_delta, signature_delta) and redacted_thinking are kept
  /// to be passed back; server_tool_use and other blocks of types deskd does not know are
  /// kept as the API sent them, or left out when a delta deskd cannot apply comes for them
  /// (the turn goes on either way). Unknown deltas of known blocks are passed over, as
  /// Anthropic's SDKs do.
  void take(const ServerSentEvent& event) override;
  bool finished() const override { return stopped_; }
  /// Throws ProviderError when message_stop never came (retryable: the stream was cut),
  /// for a refusal (quoting the model's words or the API's explanation), for a tool call
  /// cut at max_tokens or by the context window, and for tool input that is not a JSON
  /// object. ModelResponse::content holds every block in order when there are blocks
  /// beyond text and tool_use to pass back.
  ModelResponse finish() override;

 private:
  struct Block {
    enum class Kind {
      text,
      tool_use,
      thinking,      // thinking text and its signature
      server_input,  // server_tool_use and other unknown blocks with an input streamed as JSON
      kept,          // redacted_thinking, server tool results, unknown blocks: as sent
      skipped,       // an unknown block that got a delta deskd cannot apply
    } kind = Kind::text;
    std::string text;          // text, and thinking's "thinking"
    std::string signature;     // thinking
    std::string id;            // tool_use
    std::string name;
    std::string partial_json;  // the input_json_delta pieces, joined
    boost::json::object start;  // the content_block as it started
    bool stopped = false;
  };

  void start_message(const boost::json::object& data);
  void start_block(const boost::json::object& data);
  void add_delta(const boost::json::object& data);
  void stop_block(const boost::json::object& data);
  void update_message(const boost::json::object& data);
  Block& block_at(const boost::json::object& data, std::string_view event);
  void take_usage(const boost::json::object& usage);
  /// The block's input: the streamed JSON, or the input it started with when none came.
  std::optional<boost::json::object> input_of(const Block& block, std::string& problem) const;
  /// The reply's blocks in order, for ModelResponse::content.
  boost::json::array content_blocks(const ModelResponse& response) const;
  [[noreturn]] void tool_call_unusable(const Block& block, const std::string& problem) const;

  std::uint32_t max_tokens_;
  std::size_t reply_bytes_ = 0;    // what the deltas added, bounded
  std::string refusal_explanation_;  // message_delta's stop_details, for a refusal without words
  bool usage_seen_ = false;
  std::map<std::uint64_t, Block> blocks_;  // by the API's index: the reply's order
  ModelResponse response_;
  bool stopped_ = false;
};

}  // namespace deskd::model
