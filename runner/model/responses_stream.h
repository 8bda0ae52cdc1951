#pragma once
// OpenAI's Responses API's streamed reply (POST /responses with stream: true), assembled
// into a ModelResponse. No I/O: fed one server-sent event at a time, each a JSON object
// whose "type" names it (openai-python, src/openai/types/responses/response_stream_event.py):
// response.created, response.output_item.added/done, response.output_text.delta,
// response.refusal.delta, response.function_call_arguments.delta/done,
// response.reasoning_summary_text.delta and the other reasoning deltas, and one closing
// event: response.completed, response.incomplete or response.failed; or an "error" event.

#include <boost/json/object.hpp>

#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "runner/model/streamed_call.h"

namespace deskd::model {

class ResponsesStreamAssembler final : public StreamAssembler {
 public:
  /// `service` names the server in messages; `max_tokens` is the request's max_output_tokens.
  ResponsesStreamAssembler(std::string service, std::uint32_t max_tokens)
      : service_(std::move(service)), max_tokens_(max_tokens) {}

  /// Takes an event. Throws ProviderError for an "error" event and for response.failed
  /// (with the API's code and message; retryable for server_error and rate_limit_exceeded),
  /// for an event that is not a JSON object, and for a reply past 32 MiB.
  void take(const ServerSentEvent& event) override;
  bool finished() const override { return done_; }
  /// The reply: the output_text of its message items, its function calls (call_id, name,
  /// arguments parsed), and, when a reasoning item came with encrypted_content, `content`
  /// holding the items in the API's order (reasoning as an openai_reasoning block, to go
  /// back with the next request). stop_reason: "tool_use", "end_turn", or "max_tokens"
  /// for status incomplete with reason max_output_tokens. Usage: input_tokens less the
  /// cached ones, cached_tokens as cache reads, output_tokens (the reasoning tokens among
  /// them). Throws ProviderError when the stream ended before its closing event
  /// (retryable), and, billed with the reply's usage, for a refusal (refusal content, or
  /// incomplete for content_filter; both refused()) and for a function call whose
  /// arguments are not a JSON object (naming max_tokens when the reply was cut by it).
  ModelResponse finish() override;

 private:
  struct OutputItem {
    boost::json::object item;  // as added, then as done
    std::string text;          // output_text deltas, until the item is done
    std::string refusal;       // refusal deltas, until the item is done
    std::string arguments;     // function_call_arguments deltas, until the item is done
    bool done = false;
  };

  void take_item(const boost::json::object& event, bool done);
  OutputItem& item_at(const boost::json::object& event);
  void take_final(const boost::json::object& response);
  /// Counts `bytes` more of the reply; throws past the limit.
  void grow(std::size_t bytes);

  std::string service_;
  std::uint32_t max_tokens_;
  std::map<std::uint64_t, OutputItem> items_;  // by output_index: the reply's order
  boost::json::object final_;                  // the closing event's response
  std::string model_;
  std::size_t reply_bytes_ = 0;
  bool done_ = false;
};

}  // namespace deskd::model
