#include "runner/model/openai_provider.h"

#include <boost/json.hpp>

#include "runner/model/json_fields.h"
#include "runner/model/openai_stream.h"
#include "runner/model/retry.h"

namespace deskd::model {
namespace json = boost::json;
using boost::asio::awaitable;
using json_fields::string_at;

namespace {

constexpr std::string_view kOpenAiBaseUrl = "https://api.openai.com/v1";

void append_paragraph(std::string& text, std::string_view piece) {
  if (piece.empty()) return;
  if (!text.empty()) text += "\n\n";
  text += piece;
}

// `in_tool_exchange`: the message answers tool results, or follows them before the user
// spoke again.
json::object assistant_message(const json::array& blocks, bool in_tool_exchange) {
  std::string text;
  std::string reasoning;
  json::array tool_calls;
  for (const json::value& block_value : blocks) {
    const json::object* block = block_value.if_object();
    if (block == nullptr) continue;
    const std::string type = string_at(*block, "type").value_or("");
    if (type == "text") {
      append_paragraph(text, string_at(*block, "text").value_or(""));
    } else if (type == kReasoningContentBlock) {
      reasoning += string_at(*block, "text").value_or("");
    } else if (type == "tool_use") {
      const json::value* input = block->if_contains("input");
      tool_calls.push_back(json::object{
          {"id", string_at(*block, "id").value_or("")},
          {"type", "function"},
          {"function", json::object{{"name", string_at(*block, "name").value_or("")},
                                    {"arguments", input != nullptr ? json::serialize(*input) : "{}"}}}});
    }
  }
  json::object message{{"role", "assistant"}};
  if (text.empty() && !tool_calls.empty()) {
    message["content"] = nullptr;
  } else {
    message["content"] = text;
  }
  // DeepSeek's thinking-mode guide (https://api-docs.deepseek.com/guides/thinking_mode,
  // "Multi-turn Conversation"): between two user messages where the model called tools,
  // every assistant message's reasoning_content must be sent back (else HTTP 400); where it
  // called none, it is not needed. Its older deepseek-reasoner guide
  // (https://api-docs.deepseek.com/guides/reasoning_model) answers HTTP 400 to a plain
  // reply's reasoning_content in the input. So it goes back in a tool exchange only.
  if (!reasoning.empty() && (in_tool_exchange || !tool_calls.empty())) message["reasoning_content"] = reasoning;
  if (!tool_calls.empty()) message["tool_calls"] = std::move(tool_calls);
  return message;
}

bool holds_tool_calls(const json::object& message) { return message.contains("tool_calls"); }

bool holds_tool_result(const json::array& blocks) {
  for (const json::value& block : blocks) {
    const json::object* fields = block.if_object();
    if (fields != nullptr && string_at(*fields, "type") == "tool_result") return true;
  }
  return false;
}

// Tool messages must follow the assistant's tool_calls at once, so they go first; the
// user's words (steering that rode with the results) follow as their own message.
void add_user_messages(const json::array& blocks, json::array& out) {
  std::string text;
  for (const json::value& block_value : blocks) {
    const json::object* block = block_value.if_object();
    if (block == nullptr) continue;
    const std::string type = string_at(*block, "type").value_or("");
    if (type == "text") {
      append_paragraph(text, string_at(*block, "text").value_or(""));
    } else if (type == "tool_result") {
      const json::value* is_error = block->if_contains("is_error");
      const bool failed = is_error != nullptr && is_error->is_bool() && is_error->as_bool();
      const json::value* content = block->if_contains("content");
      const std::string result = content != nullptr ? json_fields::text_of(*content) : "";
      out.push_back(json::object{{"role", "tool"},
                                 {"tool_call_id", string_at(*block, "tool_use_id").value_or("")},
                                 {"content", failed ? "Error: " + result : result}});
    }
  }
  if (!text.empty()) out.push_back(json::object{{"role", "user"}, {"content", text}});
}

}  // namespace

json::array openai_messages(const ModelRequest& request) {
  json::array out;
  if (!request.system.empty()) out.push_back(json::object{{"role", "system"}, {"content", request.system}});
  bool in_tool_exchange = false;
  for (const json::value& message_value : request.messages) {
    const json::object* message = message_value.if_object();
    if (message == nullptr) continue;
    const std::string role = string_at(*message, "role").value_or("user");
    const json::value* content = message->if_contains("content");
    if (content == nullptr) continue;
    if (content->is_string()) {
      out.push_back(json::object{{"role", role}, {"content", content->as_string()}});
      in_tool_exchange = false;
    } else if (content->is_array() && role == "assistant") {
      json::object built = assistant_message(content->as_array(), in_tool_exchange);
      in_tool_exchange = in_tool_exchange || holds_tool_calls(built);
      out.push_back(std::move(built));
    } else if (content->is_array()) {
      // A user message of the person's own words (not tool results) opens a new exchange.
      if (!holds_tool_result(content->as_array())) in_tool_exchange = false;
      add_user_messages(content->as_array(), out);
    }
  }
  return out;
}

json::object openai_request_body(const ModelRequest& request, const ProviderSettings& settings) {
  json::object body;
  body["model"] = settings.model;
  body["messages"] = openai_messages(request);
  if (request.purpose == Purpose::turn && !request.tools.empty()) {
    json::array tools;
    for (const ToolSpec& tool : request.tools) {
      tools.push_back(json::object{
          {"type", "function"},
          {"function", json::object{{"name", tool.name}, {"description", tool.description}, {"parameters", tool.input_schema}}}});
    }
    body["tools"] = std::move(tools);
  }
  body["stream"] = true;
  body["stream_options"] = json::object{{"include_usage", true}};
  // max_completion_tokens is the current name (CompletionCreateParams in openai-python:
  // "max_tokens ... is not compatible with o-series models"); a local server may want the old one.
  body[settings.openai_max_tokens_field == "max_tokens" ? "max_tokens" : "max_completion_tokens"] = settings.max_tokens;
  if (settings.temperature) body["temperature"] = *settings.temperature;
  return body;
}

Result<std::unique_ptr<OpenAiProvider>> OpenAiProvider::create(boost::asio::any_io_executor executor, ProviderSettings settings) {
  if (settings.model.empty()) {
    return Error::make(ErrorCode::invalid_argument, "The openai provider needs a model name (e.g. \"gpt-4.1\", \"llama3\").");
  }
  DESKD_ASSIGN_OR_RETURN(Url url, api_endpoint("openai", settings.base_url, kOpenAiBaseUrl, "/chat/completions"));
  return std::unique_ptr<OpenAiProvider>(new OpenAiProvider(std::move(executor), std::move(settings), std::move(url)));
}

OpenAiProvider::OpenAiProvider(boost::asio::any_io_executor executor, ProviderSettings settings, Url url)
    : settings_(std::move(settings)),
      url_(std::move(url)),
      dialect_{settings_.base_url.empty() ? std::string("The OpenAI API")
                                          : "The OpenAI-compatible API at " + url_.host + ":" + std::to_string(url_.port),
               "x-request-id", read_openai_error_body},
      client_(std::move(executor), settings_.http) {}

awaitable<ModelResponse> OpenAiProvider::attempt(HttpRequest http, std::function<void()> on_progress) {
  OpenAiStreamAssembler assembler(dialect_.service, settings_.max_tokens);
  co_return co_await streamed_call_for_model(client_, std::move(http), dialect_, assembler, std::move(on_progress),
                                             settings_.model);
}

awaitable<ModelResponse> OpenAiProvider::complete(ModelRequest request) {
  HttpRequest http =
      bearer_event_stream_request(url_, settings_.api_key, json::serialize(openai_request_body(request, settings_)));
  // Not a coroutine lambda: it only starts attempt(), whose frame holds its own copy.
  ModelAttempt try_once = [this, &http, &request] { return attempt(http, request.on_progress); };
  ModelResponse response = co_await complete_with_retries_redacting(settings_.retry, dialect_.service, std::move(try_once),
                                                                    request.on_retry, settings_.api_key);
  co_return response;
}

}  // namespace deskd::model
