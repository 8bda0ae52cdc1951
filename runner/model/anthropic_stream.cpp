#include "runner/model/anthropic_stream.h"

#include <boost/json/parse.hpp>

#include <algorithm>
#include <cctype>

#include "runner/model/json_fields.h"

namespace deskd::model {
namespace json = boost::json;
using json_fields::count_at;
using json_fields::object_at;
using json_fields::string_at;

namespace {

const std::string kService(kAnthropicService);

bool contains_ignoring_case(std::string_view text, std::string_view part) {
  return std::search(text.begin(), text.end(), part.begin(), part.end(), [](char a, char b) {
           return std::tolower(static_cast<unsigned char>(a)) == std::tolower(static_cast<unsigned char>(b));
         }) != text.end();
}

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
    if (const json::object* input = object_at(*content, "input")) block.start_input = *input;
  } else {
    throw ProviderError(kService + " sent a content block of type \"" + type +
                            "\", which deskd does not handle (only text and tool_use).",
                        false);
  }
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
  if (type == "text_delta" && block.kind == Block::Kind::text) {
    block.text += string_at(*delta, "text").value_or("");
  } else if (type == "input_json_delta" && block.kind == Block::Kind::tool_use) {
    block.partial_json += string_at(*delta, "partial_json").value_or("");
  } else {
    throw ProviderError(kService + " sent a delta of type \"" + type + "\" for a " +
                            (block.kind == Block::Kind::text ? "text" : "tool_use") + " block, which deskd does not handle.",
                        false);
  }
}

void AnthropicStreamAssembler::stop_block(const json::object& data) { block_at(data, "content_block_stop").stopped = true; }

void AnthropicStreamAssembler::update_message(const json::object& data) {
  if (const json::object* delta = object_at(data, "delta")) {
    if (auto reason = string_at(*delta, "stop_reason")) response_.stop_reason = *reason;
  }
  if (const json::object* usage = object_at(data, "usage")) take_usage(*usage);
}

ModelResponse AnthropicStreamAssembler::finish() {
  if (!stopped_) {
    throw ProviderError(kService + "'s stream ended before message_stop: the reply was cut off.", true);
  }
  ModelResponse response = response_;
  for (const auto& [index, block] : blocks_) {
    if (block.kind != Block::Kind::text) continue;
    if (!response.text.empty() && !block.text.empty()) response.text += "\n\n";
    response.text += block.text;
  }
  if (response.stop_reason == "refusal") {
    throw ProviderError("The model refused to continue: " +
                            (response.text.empty() ? std::string("it gave no reason.") : shortened(response.text, 500)),
                        false);
  }
  for (const auto& [index, block] : blocks_) {
    if (block.kind != Block::Kind::tool_use) continue;
    std::string problem;
    std::optional<json::object> input;
    if (!block.stopped) {
      problem = "the block never ended";
    } else if (std::all_of(block.partial_json.begin(), block.partial_json.end(), [](unsigned char c) { return std::isspace(c); })) {
      input = block.start_input;  // a tool without parameters streams no input at all
    } else {
      input = json_fields::parse_object(block.partial_json, problem);
    }
    if (!input) {
      if (response.stop_reason == "max_tokens") {
        throw ProviderError("The reply was cut at max_tokens (" + std::to_string(max_tokens_) +
                                ") in the middle of a tool call (" + block.name +
                                "). Raise max_tokens in the desk's model settings, or ask for smaller steps.",
                            false);
      }
      throw ProviderError("The model's input for the tool \"" + block.name + "\" is not usable: " + problem + ": " +
                              body_excerpt(block.partial_json),
                          false);
    }
    response.tool_calls.push_back(ToolCall{block.id, block.name, std::move(*input)});
  }
  return response;
}

}  // namespace deskd::model
