#include "runner/model/anthropic_provider.h"

#include <boost/json.hpp>

#include <map>

#include "runner/model/anthropic_stream.h"
#include "runner/model/json_fields.h"
#include "runner/model/retry.h"

namespace deskd::model {
namespace json = boost::json;
using boost::asio::awaitable;

namespace {

constexpr std::string_view kAnthropicBaseUrl = "https://api.anthropic.com";
constexpr std::string_view kApiVersion = "2023-06-01";

json::object ephemeral_cache() { return {{"type", "ephemeral"}}; }

bool is_thinking_block(std::string_view type) { return type == "thinking" || type == "redacted_thinking"; }

// The openai provider's reasoning (a session kept from when the desk used it) means
// nothing to the Messages API, which refuses block types it does not know.
bool is_other_apis_reasoning(std::string_view type) { return type == kReasoningContentBlock || type == kOpenAiReasoningBlock; }

// Without tools in the request, the API refuses a history holding tool_use or tool_result
// blocks ("Requests which include tool_use or tool_result blocks must define tools"); side
// questions and summaries still need to know what the tools did, so it becomes text.
// They are asked without extended thinking, so thinking blocks are left out (as the SDK's
// strip_thinking_blocks does: a replayed signature may no longer be accepted), and so are
// server tool blocks, which need their tools declared too.
json::array with_tool_blocks_as_text(const json::array& messages) {
  std::map<std::string, std::string, std::less<>> tool_names;  // tool_use id -> tool
  json::array converted;
  for (const json::value& message : messages) {
    const json::object* object = message.if_object();
    const json::value* content = object != nullptr ? object->if_contains("content") : nullptr;
    if (content == nullptr || !content->is_array()) {
      converted.push_back(message);
      continue;
    }
    json::array blocks;
    for (const json::value& block : content->as_array()) {
      const json::object* fields = block.if_object();
      const std::string type = fields != nullptr ? json_fields::string_at(*fields, "type").value_or("") : "";
      if (type == "tool_use") {
        const std::string id = json_fields::string_at(*fields, "id").value_or("");
        const std::string tool = json_fields::string_at(*fields, "name").value_or("a tool");
        tool_names[id] = tool;
        const json::value* input = fields->if_contains("input");
        blocks.push_back(json::object{
            {"type", "text"}, {"text", "[I called " + tool + " with " + (input != nullptr ? json::serialize(*input) : "{}") + "]"}});
      } else if (type == "tool_result") {
        auto name = tool_names.find(json_fields::string_at(*fields, "tool_use_id").value_or(""));
        const json::value* is_error = fields->if_contains("is_error");
        const bool failed = is_error != nullptr && is_error->is_bool() && is_error->as_bool();
        const json::value* result = fields->if_contains("content");
        blocks.push_back(json::object{
            {"type", "text"},
            {"text", "[" + (name != tool_names.end() ? name->second : std::string("The tool")) + (failed ? " failed" : " answered") +
                         ": " + (result != nullptr ? json_fields::text_of(*result) : "") + "]"}});
      } else if (type == "text" || fields == nullptr || type.empty()) {
        blocks.push_back(block);
      }
    }
    json::object copy = *object;
    copy["content"] = std::move(blocks);
    converted.push_back(std::move(copy));
  }
  return converted;
}

// A request without extended thinking (`drop_thinking`) sends no thinking blocks (a
// session kept from when thinking was on): the model would not read them, and a signature
// may not be accepted. No request sends another API's reasoning.
void drop_unsendable_reasoning(json::array& messages, bool drop_thinking) {
  for (json::value& message : messages) {
    json::object* object = message.if_object();
    json::value* content = object != nullptr ? object->if_contains("content") : nullptr;
    if (content == nullptr || !content->is_array()) continue;
    json::array& blocks = content->as_array();
    for (auto it = blocks.begin(); it != blocks.end();) {
      const json::object* block = it->if_object();
      const std::string type = block != nullptr ? json_fields::string_at(*block, "type").value_or("") : "";
      const bool drop = is_other_apis_reasoning(type) || (drop_thinking && is_thinking_block(type));
      it = drop ? blocks.erase(it) : it + 1;
    }
  }
}

// The API refuses empty text blocks, and an empty message anywhere but at the end; a
// reply that said nothing is left in the transcript as an empty assistant message.
void drop_empty_content(json::array& messages) {
  for (std::size_t i = 0; i < messages.size(); ++i) {
    json::object* message = messages[i].if_object();
    json::value* content = message != nullptr ? message->if_contains("content") : nullptr;
    if (content == nullptr || !content->is_array()) continue;
    json::array& blocks = content->as_array();
    for (auto it = blocks.begin(); it != blocks.end();) {
      const json::object* block = it->if_object();
      const bool empty_text = block != nullptr && json_fields::string_at(*block, "type") == "text" &&
                              json_fields::string_at(*block, "text").value_or("").empty();
      it = empty_text ? blocks.erase(it) : it + 1;
    }
    if (blocks.empty() && i + 1 < messages.size()) blocks.push_back(json::object{{"type", "text"}, {"text", "(no reply)"}});
  }
}

// The breakpoint on the last block caches the whole conversation up to it for the next
// round; earlier breakpoints are found again by the API's look-back.
void mark_cache_breakpoint(json::array& messages) {
  if (messages.empty()) return;
  json::object* last = messages.back().if_object();
  json::value* content = last != nullptr ? last->if_contains("content") : nullptr;
  if (content == nullptr || !content->is_array() || content->as_array().empty()) return;
  json::object* block = content->as_array().back().if_object();
  // Thinking blocks cannot carry cache_control (the API refuses it); they are cached as
  // part of what follows them anyway.
  if (block == nullptr || is_thinking_block(json_fields::string_at(*block, "type").value_or(""))) return;
  (*block)["cache_control"] = ephemeral_cache();
}

}  // namespace

json::object anthropic_request_body(const ModelRequest& request, const ProviderSettings& settings) {
  const bool send_tools = request.purpose == Purpose::turn && !request.tools.empty();
  json::object body;
  body["model"] = settings.model;
  body["max_tokens"] = settings.max_tokens;
  if (!request.system.empty()) {
    body["system"] = json::array{json::object{{"type", "text"}, {"text", request.system}, {"cache_control", ephemeral_cache()}}};
  }
  // A turn's history goes as it is, thinking blocks and their signatures unchanged and in
  // their place before the tool_use they led to, as extended thinking requires.
  const bool thinking = settings.thinking_budget_tokens && request.purpose == Purpose::turn;
  json::array messages = send_tools ? request.messages : with_tool_blocks_as_text(request.messages);
  drop_unsendable_reasoning(messages, !thinking);
  drop_empty_content(messages);
  mark_cache_breakpoint(messages);
  body["messages"] = std::move(messages);
  if (send_tools) {
    json::array tools;
    for (const ToolSpec& tool : request.tools) {
      tools.push_back(json::object{{"name", tool.name}, {"description", tool.description}, {"input_schema", tool.input_schema}});
    }
    tools.back().as_object()["cache_control"] = ephemeral_cache();
    body["tools"] = std::move(tools);
  }
  body["stream"] = true;
  // {"type": "enabled", "budget_tokens": N}: ThinkingConfigEnabledParam in
  // anthropic-sdk-python (src/anthropic/types/thinking_config_enabled_param.py). Only for
  // the turn itself: side questions and summaries need no deliberation.
  if (thinking) {
    body["thinking"] = json::object{{"type", "enabled"}, {"budget_tokens", *settings.thinking_budget_tokens}};
  }
  if (settings.temperature) body["temperature"] = *settings.temperature;
  return body;
}

Result<std::unique_ptr<AnthropicProvider>> AnthropicProvider::create(boost::asio::any_io_executor executor,
                                                                     ProviderSettings settings) {
  if (settings.model.empty()) {
    return Error::make(ErrorCode::invalid_argument, "The anthropic provider needs a model name (e.g. \"claude-sonnet-4-5\").");
  }
  DESKD_ASSIGN_OR_RETURN(Url url, api_endpoint("anthropic", settings.base_url, kAnthropicBaseUrl, "/v1/messages"));
  return std::unique_ptr<AnthropicProvider>(new AnthropicProvider(std::move(executor), std::move(settings), std::move(url)));
}

AnthropicProvider::AnthropicProvider(boost::asio::any_io_executor executor, ProviderSettings settings, Url url)
    : settings_(std::move(settings)),
      url_(std::move(url)),
      dialect_{std::string(kAnthropicService), "request-id", read_anthropic_error_body},
      client_(std::move(executor), settings_.http) {}

awaitable<ModelResponse> AnthropicProvider::attempt(HttpRequest http, std::function<void()> on_progress) {
  AnthropicStreamAssembler assembler(settings_.max_tokens);
  co_return co_await streamed_call_for_model(client_, std::move(http), dialect_, assembler, std::move(on_progress),
                                             settings_.model);
}

awaitable<ModelResponse> AnthropicProvider::complete(ModelRequest request) {
  HttpRequest http;
  http.url = url_;
  http.headers = {{"x-api-key", settings_.api_key},
                  {"anthropic-version", std::string(kApiVersion)},
                  {"content-type", "application/json"},
                  {"accept", "text/event-stream"}};
  http.body = json::serialize(anthropic_request_body(request, settings_));
  // Not a coroutine lambda: it only starts attempt(), whose frame holds its own copy.
  ModelAttempt try_once = [this, &http, &request] { return attempt(http, request.on_progress); };
  ModelResponse response = co_await complete_with_retries_redacting(settings_.retry, dialect_.service, std::move(try_once),
                                                                    request.on_retry, settings_.api_key);
  co_return response;
}

}  // namespace deskd::model
