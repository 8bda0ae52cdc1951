#include "runner/model/anthropic_stream.h"

#include <boost/json/parse.hpp>

#include <algorithm>
#include <cctype>

#include "base/ascii_text.h"
#include "runner/model/json_fields.h"

namespace deskd::model {
namespace json = boost::json;
using json_fields::count_at;
using json_fields::object_at;
using json_fields::string_at;

namespace {

const std::string kService(kAnthropicService);

[[noreturn]] void malformed(std::string_view event, const std::string& what) {
  throw ProviderError(kService + " sent a malformed \"" + std::string(event) + "\" event: " + what + ".", false);
}

std::string shortened(const std::string& text, std::size_t maximum) {
  return text.size() <= maximum ? text : text.substr(0, maximum) + "...";
}

}  // namespace

std::optional<ApiFailure> read_anthropic_error(const json::value& value) {
  const json::object* body = value.if_object();
  const json::object* error = body != nullptr ? object_at(*body, "error") : nullptr;
  if (error == nullptr) return std::nullopt;
  ApiFailure failure;
  failure.type = string_at(*error, "type").value_or("");
  failure.message = string_at(*error, "message").value_or("(the API gave no message)");
  failure.transient = failure.type == "overloaded_error" || failure.type == "api_error";
  // "prompt is too long: 208310 tokens > 200000 maximum"; "input length and `max_tokens`
  // exceed context limit: ..."
  failure.context_too_long = failure.type == "invalid_request_error" &&
                             (contains_ignoring_case(failure.message, "prompt is too long") ||
                              contains_ignoring_case(failure.message, "exceed context limit"));
  return failure;
}

std::optional<ApiFailure> read_anthropic_error_body(std::string_view body) {
  boost::system::error_code code;
  const json::value value = json::parse(body, code);
  if (code) return std::nullopt;
  return read_anthropic_error(value);
}

void AnthropicStreamAssembler::take(const ServerSentEvent& event) {
  const std::string name = event.event.empty() ? "message" : event.event;
  std::string parse_error;
  const std::optional<json::object> data = json_fields::parse_object(event.data, parse_error);
  if (!data) malformed(name, parse_error + ": " + body_excerpt(event.data));
  const std::string type = string_at(*data, "type").value_or(event.event);
  if (type == "ping") return;
  if (type == "error") {
    std::optional<ApiFailure> failure = read_anthropic_error(*data);
    if (!failure) failure = ApiFailure{"", "an error event without a message: " + body_excerpt(event.data), false, false};
    throw error_in_stream(kService, *failure);
  }
  if (type == "message_start") return start_message(*data);
  if (type == "content_block_start") return start_block(*data);
  if (type == "content_block_delta") return add_delta(*data);
  if (type == "content_block_stop") return stop_block(*data);
  if (type == "message_delta") return update_message(*data);
  if (type == "message_stop") {
    stopped_ = true;
    return;
  }
  // The API may add event types; its documentation asks clients to pass over them.
}

void AnthropicStreamAssembler::start_message(const json::object& data) {
  const json::object* message = object_at(data, "message");
  if (message == nullptr) malformed("message_start", "it holds no \"message\"");
  if (auto model = string_at(*message, "model")) response_.model = *model;
  if (const json::object* usage = object_at(*message, "usage")) take_usage(*usage);
}

void AnthropicStreamAssembler::take_usage(const json::object& usage) {
  // message_start carries the input side; message_delta the running output count, and in
  // newer API versions the input side again. Each value is a total, so the latest wins.
  usage_seen_ = true;
  if (auto count = count_at(usage, "input_tokens")) response_.usage.input_tokens = *count;
  if (auto count = count_at(usage, "output_tokens")) response_.usage.output_tokens = *count;
  if (auto count = count_at(usage, "cache_read_input_tokens")) response_.usage.cache_read_tokens = *count;
  if (auto count = count_at(usage, "cache_creation_input_tokens")) response_.usage.cache_write_tokens = *count;
}

void AnthropicStreamAssembler::start_block(const json::object& data) {
  const std::optional<std::uint64_t> index = count_at(data, "index");
  const json::object* content = object_at(data, "content_block");
  if (!index || content == nullptr) malformed("content_block_start", "it lacks \"index\" or \"content_block\"");
  if (blocks_.contains(*index)) malformed("content_block_start", "block " + std::to_string(*index) + " started twice");
  const std::string type = string_at(*content, "type").value_or("");
  Block block;
  block.start = *content;
  if (type == "text") {
    block.kind = Block::Kind::text;
    block.text = string_at(*content, "text").value_or("");
  } else if (type == "tool_use") {
    block.kind = Block::Kind::tool_use;
    auto id = string_at(*content, "id");
    auto tool = string_at(*content, "name");
    if (!id || !tool) malformed("content_block_start", "a tool_use block lacks its \"id\" or \"name\"");
    block.id = *id;
    block.name = *tool;
  } else if (type == "thinking") {
    // The docs' stream starts it with "thinking" only; the SDKs' snapshots with both.
    block.kind = Block::Kind::thinking;
    block.text = string_at(*content, "thinking").value_or("");
    block.signature = string_at(*content, "signature").value_or("");
  } else if (type.empty()) {
    malformed("content_block_start", "its content block has no \"type\"");
  } else if (object_at(*content, "input") != nullptr) {
    block.kind = Block::Kind::server_input;  // server_tool_use, mcp_tool_use, ...
    block.name = string_at(*content, "name").value_or(type);
  } else {
    block.kind = Block::Kind::kept;  // redacted_thinking, web_search_tool_result, ...
  }
  reply_bytes_ += block.text.size() + block.signature.size();
  blocks_.emplace(*index, std::move(block));
}

AnthropicStreamAssembler::Block& AnthropicStreamAssembler::block_at(const json::object& data, std::string_view event) {
  const std::optional<std::uint64_t> index = count_at(data, "index");
  if (!index) malformed(event, "it has no \"index\"");
  auto found = blocks_.find(*index);
  if (found == blocks_.end()) malformed(event, "block " + std::to_string(*index) + " never started");
  return found->second;
}

void AnthropicStreamAssembler::add_delta(const json::object& data) {
  Block& block = block_at(data, "content_block_delta");
  const json::object* delta = object_at(data, "delta");
  if (delta == nullptr) malformed("content_block_delta", "it holds no \"delta\"");
  const std::string type = string_at(*delta, "type").value_or("");
  std::string* target = nullptr;
  std::string piece;
  bool replaces = false;
  if (type == "text_delta" && block.kind == Block::Kind::text) {
    target = &block.text;
    piece = string_at(*delta, "text").value_or("");
  } else if (type == "input_json_delta" && (block.kind == Block::Kind::tool_use || block.kind == Block::Kind::server_input)) {
    target = &block.partial_json;
    piece = string_at(*delta, "partial_json").value_or("");
  } else if (type == "thinking_delta" && block.kind == Block::Kind::thinking) {
    target = &block.text;
    piece = string_at(*delta, "thinking").value_or("");
  } else if (type == "signature_delta" && block.kind == Block::Kind::thinking) {
    // The signature comes whole; the SDKs assign it rather than append.
    target = &block.signature;
    piece = string_at(*delta, "signature").value_or("");
    replaces = true;
  } else if (block.kind == Block::Kind::kept || block.kind == Block::Kind::server_input) {
    // A block deskd does not know changed in a way it cannot follow: sending it back
    // could be refused, so it is left out of the transcript.
    block.kind = Block::Kind::skipped;
    return;
  } else {
    return;  // citations_delta and deltas yet to come: the text itself is unchanged
  }
  reply_bytes_ += piece.size();
  if (reply_bytes_ > kMaximumReplyBytes) {
    throw ProviderError(kService + "'s reply grew past " + std::to_string(kMaximumReplyBytes >> 20) +
                            " MiB, far more than any reply may hold; it was given up.",
                        false);
  }
  if (replaces) {
    *target = std::move(piece);
  } else {
    *target += piece;
  }
}

void AnthropicStreamAssembler::stop_block(const json::object& data) { block_at(data, "content_block_stop").stopped = true; }

void AnthropicStreamAssembler::update_message(const json::object& data) {
  if (const json::object* delta = object_at(data, "delta")) {
    if (auto reason = string_at(*delta, "stop_reason")) response_.stop_reason = *reason;
    // {"type": "refusal", "category": "cyber", "explanation": "..."} (the SDK's
    // refusal_response.txt fixture)
    if (const json::object* details = object_at(*delta, "stop_details")) {
      refusal_explanation_ = string_at(*details, "explanation").value_or("");
      if (refusal_explanation_.empty()) refusal_explanation_ = string_at(*details, "category").value_or("");
    }
  }
  if (const json::object* usage = object_at(data, "usage")) take_usage(*usage);
}

std::optional<json::object> AnthropicStreamAssembler::input_of(const Block& block, std::string& problem) const {
  if (!block.stopped) {
    problem = "the block never ended";
    return std::nullopt;
  }
  if (blank(block.partial_json)) {
    // A tool without parameters streams no input at all.
    const json::object* input = object_at(block.start, "input");
    return input != nullptr ? *input : json::object{};
  }
  return json_fields::parse_object(block.partial_json, problem);
}

void AnthropicStreamAssembler::tool_call_unusable(const Block& block, const std::string& problem) const {
  // The reply arrived whole, with its usage: it is billed, so it is counted.
  const BilledReply billed{response_.usage, usage_seen_, response_.model};
  if (response_.stop_reason == "max_tokens") {
    throw ProviderError::unusable_reply("The reply was cut at max_tokens (" + std::to_string(max_tokens_) +
                                            ") in the middle of a tool call (" + block.name +
                                            "). Raise max_tokens in the desk's model settings, or ask for smaller steps.",
                                        billed, false);
  }
  if (response_.stop_reason == "model_context_window_exceeded") {
    throw ProviderError::unusable_reply("The reply was cut in the middle of a tool call (" + block.name +
                                            ") because the conversation filled the model's context window. Start a new "
                                            "session, or let the desk compact this one.",
                                        billed, false);
  }
  throw ProviderError::unusable_reply("The model's input for the tool \"" + block.name + "\" is not usable: " + problem +
                                          ": " + body_excerpt(block.partial_json),
                                      billed, false);
}

json::array AnthropicStreamAssembler::content_blocks(const ModelResponse& response) const {
  json::array content;
  auto call = response.tool_calls.begin();
  for (const auto& [index, block] : blocks_) {
    switch (block.kind) {
      case Block::Kind::text:
        if (!block.text.empty()) content.push_back(json::object{{"type", "text"}, {"text", block.text}});
        break;
      case Block::Kind::tool_use:
        // finish() made one call of each tool_use block, in this same order.
        content.push_back(json::object{{"type", "tool_use"}, {"id", call->id}, {"name", call->name}, {"input", call->input}});
        ++call;
        break;
      case Block::Kind::thinking:
        // The API refuses a thinking block without its signature: one cut short is left out.
        if (block.stopped && !block.signature.empty()) {
          content.push_back(json::object{{"type", "thinking"}, {"thinking", block.text}, {"signature", block.signature}});
        }
        break;
      case Block::Kind::server_input: {
        std::string problem;
        std::optional<json::object> input = input_of(block, problem);
        if (!input) break;  // cut or unreadable: it cannot be sent back
        json::object kept = block.start;
        kept["input"] = std::move(*input);
        content.push_back(std::move(kept));
        break;
      }
      case Block::Kind::kept:
        if (block.stopped) content.push_back(block.start);
        break;
      case Block::Kind::skipped:
        break;
    }
  }
  return content;
}

ModelResponse AnthropicStreamAssembler::finish() {
  if (!stopped_) {
    throw ProviderError(kService + "'s stream ended before message_stop: the reply was cut off.", true);
  }
  ModelResponse response = response_;
  response.usage_reported = usage_seen_;
  bool beyond_text_and_tools = false;
  for (const auto& [index, block] : blocks_) {
    if (block.kind != Block::Kind::text) {
      beyond_text_and_tools = beyond_text_and_tools || block.kind != Block::Kind::tool_use;
      continue;
    }
    if (!response.text.empty() && !block.text.empty()) response.text += "\n\n";
    response.text += block.text;
  }
  if (response.stop_reason == "refusal") {
    std::string words = shortened(response.text, kMaximumRefusalQuote);
    if (!refusal_explanation_.empty()) {
      words += (words.empty() ? "" : " (") + shortened(refusal_explanation_, kMaximumRefusalQuote) + (words.empty() ? "" : ")");
    }
    // Billed like any reply (message_delta carries its usage), and marked: the refused
    // message leaves the session, as the API's documentation asks ("you must reset the
    // conversation context", Messages API, "Handling stop reasons": refusal).
    throw ProviderError::unusable_reply(
        "The model refused to continue: " + (words.empty() ? std::string("it gave no reason.") : words),
        BilledReply{response.usage, usage_seen_, response.model}, true);
  }
  for (const auto& [index, block] : blocks_) {
    if (block.kind != Block::Kind::tool_use) continue;
    std::string problem;
    std::optional<json::object> input = input_of(block, problem);
    if (!input) tool_call_unusable(block, problem);
    response.tool_calls.push_back(ToolCall{block.id, block.name, std::move(*input)});
  }
  if (beyond_text_and_tools) response.content = content_blocks(response);
  return response;
}

}  // namespace deskd::model
