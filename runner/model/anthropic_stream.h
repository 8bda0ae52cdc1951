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
  /// is not JSON, a content block or delta of a type deskd does not know, or a delta for
  /// a block that never started. Unknown event types are skipped, as the API asks.
  void take(const ServerSentEvent& event) override;
  bool finished() const override { return stopped_; }
  /// Throws ProviderError when message_stop never came (retryable: the stream was cut),
  /// for a refusal, for a tool call cut at max_tokens, and for tool input that is not a
  /// JSON object.
  ModelResponse finish() override;

 private:
  struct Block {
    enum class Kind { text, tool_use } kind = Kind::text;
    std::string text;          // text blocks
    std::string id;            // tool_use blocks, from here on
    std::string name;
    std::string partial_json;  // the input_json_delta pieces, joined
    boost::json::object start_input;
    bool stopped = false;
  };

  void start_message(const boost::json::object& data);
  void start_block(const boost::json::object& data);
  void add_delta(const boost::json::object& data);
  void stop_block(const boost::json::object& data);
  void update_message(const boost::json::object& data);
  Block& block_at(const boost::json::object& data, std::string_view event);
  void take_usage(const boost::json::object& usage);

  std::uint32_t max_tokens_;
  std::map<std::uint64_t, Block> blocks_;  // by the API's index: the reply's order
  ModelResponse response_;
  bool stopped_ = false;
};

}  // namespace deskd::model
