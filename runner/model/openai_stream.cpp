#include "runner/model/openai_stream.h"

#include <boost/json.hpp>

#include <algorithm>
#include <cctype>

#include "base/ascii_text.h"
#include "runner/model/json_fields.h"

namespace deskd::model {
namespace json = boost::json;
using json_fields::count_at;
using json_fields::object_at;
using json_fields::string_at;

std::optional<ApiFailure> read_openai_error(const json::value& value) {
  const json::object* body = value.if_object();
  const json::value* error = body != nullptr ? body->if_contains("error") : nullptr;
  if (error == nullptr || error->is_null()) return std::nullopt;
  ApiFailure failure;
  std::string code;
  if (error->is_string()) {
    failure.message = std::string(error->as_string());
  } else if (const json::object* fields = error->if_object()) {
    failure.type = string_at(*fields, "type").value_or("");
    failure.message = string_at(*fields, "message").value_or("(the API gave no message)");
    code = string_at(*fields, "code").value_or("");
  } else {
    return std::nullopt;
  }
  // Ollama reports a missing model as "api_error"; only a server error is worth a retry.
  failure.transient = failure.type == "server_error" || code == "server_error";
  // A 429 that no wait can cure: {"error": {"message": "You exceeded your current quota,
  // ...", "type": "insufficient_quota", "param": null, "code": "insufficient_quota"}}
  // (https://platform.openai.com/docs/guides/error-codes, "429 - You exceeded your current quota").
  failure.quota_exhausted = failure.type == "insufficient_quota" || code == "insufficient_quota";
  failure.context_too_long = code == "context_length_exceeded" ||
                             contains_ignoring_case(failure.message, "maximum context length") ||
                             contains_ignoring_case(failure.message, "exceeds the context window");
  if (failure.type.empty()) failure.type = code;
  return failure;
}

std::optional<ApiFailure> read_openai_error_body(std::string_view body) {
  boost::system::error_code code;
  const json::value value = json::parse(body, code);
  if (code) return std::nullopt;
  return read_openai_error(value);
}

void OpenAiStreamAssembler::take(const ServerSentEvent& event) {
  std::string_view data = event.data;
  while (!data.empty() && std::isspace(static_cast<unsigned char>(data.back()))) data.remove_suffix(1);
  if (data == "[DONE]") {
    done_ = true;
    return;
  }
  std::string parse_error;
  const std::optional<json::object> chunk = json_fields::parse_object(data, parse_error);
  if (!chunk) {
    throw ProviderError(service_ + " sent a malformed chunk (" + parse_error + "): " + body_excerpt(data) + ".", false);
  }
  if (std::optional<ApiFailure> failure = read_openai_error(*chunk)) throw error_in_stream(service_, *failure);
  if (auto model = string_at(*chunk, "model"); model && !model->empty()) response_.model = *model;
  if (const json::object* usage = object_at(*chunk, "usage")) take_usage(*usage);
  const json::value* choices = chunk->if_contains("choices");
  if (choices == nullptr || !choices->is_array()) return;  // the usage chunk has none
  for (const json::value& choice_value : choices->as_array()) {
    const json::object* choice = choice_value.if_object();
    if (choice == nullptr) continue;
    if (count_at(*choice, "index").value_or(0) != 0) continue;  // one choice was asked for
    if (const json::object* delta = object_at(*choice, "delta")) {
      if (auto content = string_at(*delta, "content")) {
        grow(content->size());
        response_.text += *content;
      }
      // The chain of thought of DeepSeek, vLLM and other compatible servers, beside the
      // answer: "reasoning_content" (DeepSeek's thinking-mode guide,
      // https://api-docs.deepseek.com/guides/thinking_mode; vLLM's reasoning outputs), or
      // "reasoning" (vLLM's newer name, OpenRouter). Kept, not shown as the reply.
      for (const char* field : {"reasoning_content", "reasoning"}) {
        if (auto reasoning = string_at(*delta, field)) {
          grow(reasoning->size());
          reasoning_ += *reasoning;
          break;
        }
      }
      if (auto refusal = string_at(*delta, "refusal")) {
        grow(refusal->size());
        refusal_ += *refusal;
      }
      if (const json::value* calls = delta->if_contains("tool_calls"); calls != nullptr && calls->is_array()) {
        std::uint64_t position = 0;
        for (const json::value& piece : calls->as_array()) take_tool_call(piece, position++);
      }
    }
    if (auto reason = string_at(*choice, "finish_reason")) finish_reason_ = *reason;
  }
}

void OpenAiStreamAssembler::grow(std::size_t bytes) {
  reply_bytes_ += bytes;
  if (reply_bytes_ > kMaximumReplyBytes) {
    throw ProviderError(service_ + "'s reply grew past " + std::to_string(kMaximumReplyBytes >> 20) +
                            " MiB, far more than any reply may hold; it was given up.",
                        false);
  }
}

void OpenAiStreamAssembler::take_usage(const json::object& usage) {
  usage_seen_ = true;
  // prompt_tokens counts the cached tokens too; desk::Usage keeps them apart, as the
  // Messages API does, so that each kind is priced once.
  const std::uint64_t prompt = count_at(usage, "prompt_tokens").value_or(0);
  std::uint64_t cached = 0;
  if (const json::object* details = object_at(usage, "prompt_tokens_details")) {
    cached = count_at(*details, "cached_tokens").value_or(0);
  } else {
    // DeepSeek counts its cache hits as prompt_cache_hit_tokens (of prompt_tokens; its
    // "Context Caching" guide, https://api-docs.deepseek.com/guides/kv_cache).
    cached = count_at(usage, "prompt_cache_hit_tokens").value_or(0);
  }
  cached = std::min(cached, prompt);
  response_.usage.input_tokens = prompt - cached;
  response_.usage.cache_read_tokens = cached;
  response_.usage.output_tokens = count_at(usage, "completion_tokens").value_or(0);
}

void OpenAiStreamAssembler::take_tool_call(const json::value& piece, std::uint64_t position) {
  const json::object* fields = piece.if_object();
  if (fields == nullptr) return;
  // Some servers leave out "index" when they send each call whole.
  const std::uint64_t index = count_at(*fields, "index").value_or(position);
  // A piece with an empty name and arguments counts no bytes: the calls are bounded by
  // their number too. A turn's tool calls are tens.
  if (calls_.size() >= kMaximumReplyItems && !calls_.contains(index)) {
    throw ProviderError(service_ + "'s reply named more than " + std::to_string(kMaximumReplyItems) +
                            " tool calls, far more than any reply holds; it was given up.",
                        false);
  }
  PendingCall& call = calls_[index];
  if (auto id = string_at(*fields, "id"); id && !id->empty()) call.id = *id;
  const json::object* function = object_at(*fields, "function");
  if (function == nullptr) return;
  // Some servers repeat the name in every piece; it is the same name, not a continuation.
  if (auto name = string_at(*function, "name"); name && !name->empty()) call.name = *name;
  if (const json::value* arguments = function->if_contains("arguments")) {
    if (arguments->is_string()) {
      grow(arguments->as_string().size());
      call.arguments += arguments->as_string();
    } else if (arguments->is_object()) {
      call.arguments = json::serialize(*arguments);  // servers that send the arguments parsed
      grow(call.arguments.size());
    }
  }
}

ModelResponse OpenAiStreamAssembler::finish() {
  if (!done_ && finish_reason_.empty()) {
    throw ProviderError(service_ + "'s stream ended before [DONE]: the reply was cut off.", true);
  }
  // Whatever cannot be used below was still answered whole and is billed: the usage
  // chunk comes after the finish_reason, before [DONE].
  const BilledReply billed{response_.usage, usage_seen_, response_.model};
  // A refusal streams as delta.refusal pieces with finish_reason "stop" (the SDK's
  // ChoiceDelta.refusal); the words are what the user needs to see.
  if (!blank(refusal_)) {
    const std::string words = refusal_.size() <= kMaximumRefusalQuote ? refusal_ : refusal_.substr(0, kMaximumRefusalQuote) + "...";
    throw ProviderError::unusable_reply("The model refused to continue: " + words, billed, true);
  }
  if (finish_reason_ == "content_filter") {
    throw ProviderError::unusable_reply("The model refused to continue: the provider's content filter stopped the reply" +
                                            (response_.text.empty() ? std::string(".") : ": " + body_excerpt(response_.text)),
                                        billed, true);
  }
  ModelResponse response = response_;
  response.usage_reported = usage_seen_;
  for (const auto& [index, call] : calls_) {
    const std::string tool = call.name.empty() ? "(unnamed)" : call.name;
    std::string problem;
    std::optional<json::object> input;
    if (call.name.empty()) {
      problem = "the call has no tool name";
    } else if (blank(call.arguments)) {
      input = json::object{};
    } else {
      input = json_fields::parse_object(call.arguments, problem);
    }
    if (!input) {
      if (finish_reason_ == "length") {
        throw ProviderError::unusable_reply("The reply was cut at max_tokens (" + std::to_string(max_tokens_) +
                                                ") in the middle of a tool call (" + tool +
                                                "). Raise max_tokens in the desk's model settings, or ask for smaller steps.",
                                            billed, false);
      }
      throw ProviderError::unusable_reply("The model's arguments for the tool \"" + tool + "\" are not usable: " + problem +
                                              ": " + body_excerpt(call.arguments),
                                          billed, false);
    }
    const std::string id = call.id.empty() ? "call_" + std::to_string(index) : call.id;
    response.tool_calls.push_back(ToolCall{id, call.name, std::move(*input)});
  }
  if (!blank(reasoning_)) {
    // The transcript keeps the reasoning before what it led to, as it keeps Anthropic's
    // thinking; openai_messages decides when it goes back.
    response.content.push_back(json::object{{"type", kReasoningContentBlock}, {"text", reasoning_}});
    if (!response.text.empty()) response.content.push_back(json::object{{"type", "text"}, {"text", response.text}});
    for (const ToolCall& call : response.tool_calls) {
      response.content.push_back(
          json::object{{"type", "tool_use"}, {"id", call.id}, {"name", call.name}, {"input", call.input}});
    }
  }
  if (finish_reason_ == "stop") {
    // Some local servers say "stop" after tool calls; the calls are what counts.
    response.stop_reason = response.tool_calls.empty() ? "end_turn" : "tool_use";
  } else if (finish_reason_ == "tool_calls" || finish_reason_ == "function_call") {
    response.stop_reason = "tool_use";
  } else if (finish_reason_ == "length") {
    response.stop_reason = "max_tokens";
  } else if (finish_reason_.empty()) {
    response.stop_reason = response.tool_calls.empty() ? "" : "tool_use";
  } else {
    response.stop_reason = finish_reason_;
  }
  return response;
}

}  // namespace deskd::model
