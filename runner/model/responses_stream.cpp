#include "runner/model/responses_stream.h"

#include <boost/json.hpp>

#include <algorithm>

#include "base/ascii_text.h"
#include "runner/model/json_fields.h"
#include "runner/model/openai_stream.h"

namespace deskd::model {
namespace json = boost::json;
using json_fields::count_at;
using json_fields::object_at;
using json_fields::string_at;

namespace {

// An "error" event ({"type": "error", "code", "message", "param"}: ResponseErrorEvent) or
// a failed response's error ({"code", "message"}: ResponseError) read as the API's error
// body, so that its code means what it means in an HTTP error (server_error is worth a
// retry, context_length_exceeded is a conversation past the window).
ApiFailure responses_failure(const json::object& error, bool rate_limit_transient) {
  json::object fields{{"message", string_at(error, "message").value_or("(the API gave no message)")}};
  if (auto code = string_at(error, "code")) fields["code"] = *code;
  // The event's own "type" is "error"; a nested error's type says what kind it is.
  if (auto type = string_at(error, "type"); type && *type != "error") fields["type"] = *type;
  std::optional<ApiFailure> failure = read_openai_error(json::object{{"error", std::move(fields)}});
  ApiFailure read = failure.value_or(ApiFailure{});
  // ResponseError's codes hold "rate_limit_exceeded": a failed response that waiting cures.
  if (rate_limit_transient && string_at(error, "code") == "rate_limit_exceeded") read.transient = true;
  return read;
}

// The text of a message item's content parts of `part_type`: output_text's "text", or
// refusal's "refusal" (ResponseOutputMessage: content is ResponseOutputText | ResponseOutputRefusal).
std::string message_parts(const json::object& item, std::string_view part_type, std::string_view field) {
  std::string text;
  const json::value* content = item.if_contains("content");
  if (content == nullptr || !content->is_array()) return text;
  for (const json::value& part : content->as_array()) {
    const json::object* fields = part.if_object();
    if (fields != nullptr && string_at(*fields, "type") == part_type) text += string_at(*fields, field).value_or("");
  }
  return text;
}

void join_paragraph(std::string& text, const std::string& piece) {
  if (piece.empty()) return;
  if (!text.empty()) text += "\n\n";
  text += piece;
}

// A reasoning item as it goes back with store = false: its summary and encrypted content,
// without the id, which the API would look up among stored items and not find ("Item with
// id 'rs_...' not found. Items are not persisted when `store` is set to false"). OpenAI's
// own stateless client does the same: openai/codex, codex-rs/protocol/src/models.rs,
// ResponseItem::Reasoning { #[serde(skip_serializing)] id, summary, encrypted_content }.
json::object reasoning_to_send_back(const json::object& item) {
  json::object kept{{"type", "reasoning"}};
  const json::value* summary = item.if_contains("summary");
  kept["summary"] = summary != nullptr && summary->is_array() ? *summary : json::array{};
  kept["encrypted_content"] = string_at(item, "encrypted_content").value_or("");
  return kept;
}

}  // namespace

ResponsesStreamAssembler::OutputItem& ResponsesStreamAssembler::item_at(const json::object& event) {
  const std::uint64_t index = count_at(event, "output_index").value_or(0);
  // Every event may name a new item, and an empty delta counts no bytes: the items are
  // bounded by their number too. A reply holds a few; a turn's tool calls, tens.
  if (items_.size() >= kMaximumReplyItems && !items_.contains(index)) {
    throw ProviderError(service_ + "'s reply named more than " + std::to_string(kMaximumReplyItems) +
                            " output items, far more than any reply holds; it was given up.",
                        false);
  }
  return items_[index];
}

void ResponsesStreamAssembler::grow(std::size_t bytes) {
  reply_bytes_ += bytes;
  if (reply_bytes_ > kMaximumReplyBytes) {
    throw ProviderError(service_ + "'s reply grew past " + std::to_string(kMaximumReplyBytes >> 20) +
                            " MiB, far more than any reply may hold; it was given up.",
                        false);
  }
}

void ResponsesStreamAssembler::take_item(const json::object& event, bool done) {
  const json::object* item = object_at(event, "item");
  if (item == nullptr) return;
  OutputItem& kept = item_at(event);
  kept.item = *item;
  kept.done = done;
}

void ResponsesStreamAssembler::take_final(const json::object& response) {
  final_ = response;
  if (auto model = string_at(response, "model"); model && !model->empty()) model_ = *model;
  done_ = true;
}

void ResponsesStreamAssembler::take(const ServerSentEvent& event) {
  std::string parse_error;
  const std::optional<json::object> data = json_fields::parse_object(event.data, parse_error);
  if (!data) {
    throw ProviderError(service_ + " sent a malformed event (" + parse_error + "): " + body_excerpt(event.data) + ".",
                        false);
  }
  // The event's name is in its data ("type") and in its "event:" line; the data is what
  // the SDKs read.
  const std::string type = string_at(*data, "type").value_or(event.event);
  if (type == "error") {
    // Some servers nest it as {"type": "error", "error": {...}}.
    const json::object* nested = object_at(*data, "error");
    throw error_in_stream(service_, responses_failure(nested != nullptr ? *nested : *data, false));
  }
  if (type == "response.failed") {
    const json::object* response = object_at(*data, "response");
    const json::object* error = response != nullptr ? object_at(*response, "error") : nullptr;
    throw error_in_stream(service_, error != nullptr ? responses_failure(*error, true)
                                                     : ApiFailure{"", "the response failed without saying why", true});
  }
  if (type == "response.completed" || type == "response.incomplete") {
    const json::object* response = object_at(*data, "response");
    take_final(response != nullptr ? *response : json::object{});
    return;
  }
  if (type == "response.created" || type == "response.in_progress" || type == "response.queued") {
    if (const json::object* response = object_at(*data, "response")) {
      if (auto model = string_at(*response, "model"); model && !model->empty()) model_ = *model;
    }
    return;
  }
  if (type == "response.output_item.added" || type == "response.output_item.done") {
    grow(event.data.size());
    take_item(*data, type == "response.output_item.done");
    return;
  }
  const std::string delta = string_at(*data, "delta").value_or("");
  grow(delta.size());
  if (type == "response.output_text.delta") {
    item_at(*data).text += delta;
  } else if (type == "response.refusal.delta") {
    item_at(*data).refusal += delta;
  } else if (type == "response.function_call_arguments.delta") {
    item_at(*data).arguments += delta;
  } else if (type == "response.function_call_arguments.done") {
    if (auto arguments = string_at(*data, "arguments")) item_at(*data).arguments = *arguments;
  }
  // The reasoning deltas (summary text, reasoning text) and events of other kinds carry
  // nothing the reply needs: the done reasoning item holds what goes back.
}

ModelResponse ResponsesStreamAssembler::finish() {
  if (!done_) {
    throw ProviderError(service_ + "'s stream ended before response.completed: the reply was cut off.", true);
  }
  ModelResponse response;
  response.model = model_;
  if (const json::object* usage = object_at(final_, "usage")) {
    response.usage_reported = true;
    // input_tokens counts the cached ones too (ResponseUsage.input_tokens_details.cached_tokens);
    // desk::Usage keeps them apart so that each kind is priced once. output_tokens holds the
    // reasoning tokens (output_tokens_details.reasoning_tokens), billed as output.
    const std::uint64_t input = count_at(*usage, "input_tokens").value_or(0);
    std::uint64_t cached = 0;
    if (const json::object* details = object_at(*usage, "input_tokens_details")) {
      cached = std::min(count_at(*details, "cached_tokens").value_or(0), input);
    }
    response.usage.input_tokens = input - cached;
    response.usage.cache_read_tokens = cached;
    response.usage.output_tokens = count_at(*usage, "output_tokens").value_or(0);
  } else {
    response.usage_reported = false;
  }
  std::string incomplete_reason;
  if (const json::object* details = object_at(final_, "incomplete_details")) {
    incomplete_reason = string_at(*details, "reason").value_or("");
    // The spec's own ResponseIncompleteEvent example says "max_tokens"; the type,
    // "max_output_tokens". Both are the request's limit.
    if (incomplete_reason == "max_tokens") incomplete_reason = "max_output_tokens";
  }
  // A server that streamed no items has them in the closing response's output.
  if (items_.empty()) {
    if (const json::value* output = final_.if_contains("output"); output != nullptr && output->is_array()) {
      std::uint64_t index = 0;
      for (const json::value& item : output->as_array()) {
        if (item.is_object()) items_[index] = OutputItem{item.as_object(), {}, {}, {}, true};
        ++index;
      }
    }
  }
  const BilledReply billed{response.usage, response.usage_reported, response.model};

  std::string refusal;
  bool reasoning_to_pass_back = false;
  json::array content;
  for (auto& [index, output] : items_) {
    std::string item_type = string_at(output.item, "type").value_or("");
    // Text whose item was never announced is still the reply's text.
    if (item_type.empty() && (!output.text.empty() || !output.refusal.empty())) item_type = "message";
    if (item_type == "message") {
      // The done item is whole; a cut stream leaves only the deltas.
      const std::string text = output.done ? message_parts(output.item, "output_text", "text") : output.text;
      join_paragraph(refusal, output.done ? message_parts(output.item, "refusal", "refusal") : output.refusal);
      join_paragraph(response.text, text);
      if (!text.empty()) content.push_back(json::object{{"type", "text"}, {"text", text}});
    } else if (item_type == "function_call") {
      const std::string name = string_at(output.item, "name").value_or("");
      const std::string arguments =
          output.done ? string_at(output.item, "arguments").value_or(output.arguments) : output.arguments;
      std::string problem;
      std::optional<json::object> input;
      if (name.empty()) {
        problem = "the call has no tool name";
      } else if (blank(arguments)) {
        input = json::object{};
      } else {
        input = json_fields::parse_object(arguments, problem);
      }
      const std::string tool = name.empty() ? "(unnamed)" : name;
      if (!input && incomplete_reason == "max_output_tokens") {
        throw ProviderError::unusable_reply(
            "The reply was cut at max_tokens (" + std::to_string(max_tokens_) + ") in the middle of a tool call (" +
                tool + "). Raise max_tokens in the desk's model settings, or ask for smaller steps.",
            billed, false);
      }
      if (!input) {
        throw ProviderError::unusable_reply("The model's arguments for the tool \"" + tool +
                                                "\" are not usable: " + problem + ": " + body_excerpt(arguments),
                                            billed, false);
      }
      const std::string call_id = string_at(output.item, "call_id").value_or("call_" + std::to_string(index));
      response.tool_calls.push_back(ToolCall{call_id, name, *input});
      content.push_back(
          json::object{{"type", "tool_use"}, {"id", call_id}, {"name", name}, {"input", std::move(*input)}});
    } else if (item_type == "reasoning" && output.done &&
               !blank(string_at(output.item, "encrypted_content").value_or(""))) {
      // Only the done item's encrypted_content is whole (ResponseReasoningItem: "use the
      // completed reasoning item and its encrypted_content from the response.output_item.done
      // event"); without it the item cannot go back when the API keeps nothing.
      reasoning_to_pass_back = true;
      content.push_back(json::object{{"type", kOpenAiReasoningBlock}, {"item", reasoning_to_send_back(output.item)}});
    }
  }
  if (!blank(refusal)) {
    const std::string words =
        refusal.size() <= kMaximumRefusalQuote ? refusal : refusal.substr(0, kMaximumRefusalQuote) + "...";
    throw ProviderError::unusable_reply("The model refused to continue: " + words, billed, true);
  }
  if (incomplete_reason == "content_filter") {
    throw ProviderError::unusable_reply(
        "The model refused to continue: the provider's content filter stopped the reply" +
            (response.text.empty() ? std::string(".") : ": " + body_excerpt(response.text)),
        billed, true);
  }
  if (reasoning_to_pass_back) response.content = std::move(content);
  if (!response.tool_calls.empty()) {
    response.stop_reason = "tool_use";
  } else if (incomplete_reason == "max_output_tokens") {
    response.stop_reason = "max_tokens";
  } else {
    response.stop_reason = "end_turn";
  }
  return response;
}

}  // namespace deskd::model
