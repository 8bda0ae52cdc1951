#include "runner/model/responses_provider.h"

#include <boost/json.hpp>

#include <map>

#include "runner/model/json_fields.h"
#include "runner/model/openai_stream.h"
#include "runner/model/responses_stream.h"
#include "runner/model/retry.h"

namespace deskd::model {
namespace json = boost::json;
using boost::asio::awaitable;
using json_fields::string_at;

namespace {

constexpr std::string_view kResponsesBaseUrl = "https://api.openai.com/v1";

bool is_true(const json::object& object, std::string_view key) {
  const json::value* found = object.if_contains(key);
  return found != nullptr && found->is_bool() && found->as_bool();
}

// Builds the input items of one conversation, in order.
class InputBuilder {
 public:
  explicit InputBuilder(bool tools_declared) : tools_declared_(tools_declared) {}

  void add(const json::object& message) {
    const std::string role = string_at(message, "role").value_or("user");
    const json::value* content = message.if_contains("content");
    if (content == nullptr) return;
    if (content->is_string()) {
      if (!content->as_string().empty())
        items_.push_back(json::object{{"role", role}, {"content", content->as_string()}});
    } else if (content->is_array() && role == "assistant") {
      add_assistant(content->as_array());
    } else if (content->is_array()) {
      add_user(content->as_array());
    }
  }

  json::array take() { return std::move(items_); }

 private:
  // The outputs must follow their calls, so they go first; the user's words (steering
  // that rode with the results) follow as their own message.
  void add_user(const json::array& blocks) {
    std::string text;
    for (const json::value& block_value : blocks) {
      const json::object* block = block_value.if_object();
      if (block == nullptr) continue;
      const std::string type = string_at(*block, "type").value_or("");
      if (type == "text") {
        append(text, string_at(*block, "text").value_or(""));
      } else if (type == "tool_result") {
        const json::value* content = block->if_contains("content");
        const std::string result = content != nullptr ? json_fields::text_of(*content) : "";
        const std::string call_id = string_at(*block, "tool_use_id").value_or("");
        if (tools_declared_) {
          items_.push_back(json::object{{"type", "function_call_output"},
                                        {"call_id", call_id},
                                        {"output", is_true(*block, "is_error") ? "Error: " + result : result}});
        } else {
          const auto name = tool_names_.find(call_id);
          append(text, "[" + (name != tool_names_.end() ? name->second : std::string("The tool")) +
                           (is_true(*block, "is_error") ? " failed" : " answered") + ": " + result + "]");
        }
      }
    }
    if (!text.empty()) items_.push_back(json::object{{"role", "user"}, {"content", text}});
  }

  void add_assistant(const json::array& blocks) {
    std::string text;
    const auto flush_text = [&] {
      if (!text.empty()) items_.push_back(json::object{{"role", "assistant"}, {"content", std::exchange(text, {})}});
    };
    for (const json::value& block_value : blocks) {
      const json::object* block = block_value.if_object();
      if (block == nullptr) continue;
      const std::string type = string_at(*block, "type").value_or("");
      if (type == "text") {
        append(text, string_at(*block, "text").value_or(""));
      } else if (type == "tool_use") {
        const std::string id = string_at(*block, "id").value_or("");
        const std::string name = string_at(*block, "name").value_or("");
        const json::value* input = block->if_contains("input");
        const std::string arguments = input != nullptr ? json::serialize(*input) : "{}";
        tool_names_[id] = name;
        if (tools_declared_) {
          flush_text();
          // No item id: nothing is stored to look it up by (openai/codex's FunctionCall
          // skips serializing its id too, codex-rs/protocol/src/models.rs).
          items_.push_back(
              json::object{{"type", "function_call"}, {"call_id", id}, {"name", name}, {"arguments", arguments}});
        } else {
          append(text, "[I called " + name + " with " + arguments + "]");
        }
      } else if (type == kOpenAiReasoningBlock && tools_declared_) {
        const json::object* item = json_fields::object_at(*block, "item");
        if (item == nullptr) continue;
        flush_text();
        items_.push_back(*item);
      }
    }
    flush_text();
    // "Item of type 'reasoning' was provided without its required following item": a
    // reasoning item goes back only with what it led to.
    while (!items_.empty() && string_at(items_.back().as_object(), "type") == "reasoning") items_.pop_back();
  }

  static void append(std::string& text, const std::string& piece) {
    if (piece.empty()) return;
    if (!text.empty()) text += "\n\n";
    text += piece;
  }

  bool tools_declared_;
  json::array items_;
  std::map<std::string, std::string, std::less<>> tool_names_;  // call_id -> tool, for text
};

}  // namespace

json::array responses_input(const ModelRequest& request) {
  InputBuilder builder(request.purpose == Purpose::turn);
  for (const json::value& message : request.messages) {
    if (const json::object* object = message.if_object()) builder.add(*object);
  }
  return builder.take();
}

json::object responses_request_body(const ModelRequest& request, const ProviderSettings& settings) {
  json::object body;
  body["model"] = settings.model;
  if (!request.system.empty()) body["instructions"] = request.system;
  body["input"] = responses_input(request);
  if (request.purpose == Purpose::turn && !request.tools.empty()) {
    json::array tools;
    for (const ToolSpec& tool : request.tools) {
      // strict is required (FunctionToolParam: Required[Optional[bool]]); strict schemas
      // need every property required and additionalProperties false, which the desk's
      // tools' schemas are not, so the arguments are checked by the tools instead.
      tools.push_back(json::object{{"type", "function"},
                                   {"name", tool.name},
                                   {"description", tool.description},
                                   {"parameters", tool.input_schema},
                                   {"strict", false}});
    }
    body["tools"] = std::move(tools);
  }
  body["stream"] = true;
  body["store"] = false;
  if (settings.openai_encrypted_reasoning) body["include"] = json::array{"reasoning.encrypted_content"};
  body["max_output_tokens"] = settings.max_tokens;
  if (settings.temperature) body["temperature"] = *settings.temperature;
  return body;
}

Result<std::unique_ptr<ResponsesProvider>> ResponsesProvider::create(boost::asio::any_io_executor executor,
                                                                     ProviderSettings settings) {
  if (settings.model.empty()) {
    return Error::make(ErrorCode::invalid_argument,
                       "The openai provider needs a model name (e.g. \"gpt-5\", \"o3-pro\").");
  }
  DESKD_ASSIGN_OR_RETURN(Url url, api_endpoint("openai", settings.base_url, kResponsesBaseUrl, "/responses"));
  return std::unique_ptr<ResponsesProvider>(
      new ResponsesProvider(std::move(executor), std::move(settings), std::move(url)));
}

ResponsesProvider::ResponsesProvider(boost::asio::any_io_executor executor, ProviderSettings settings, Url url)
    : settings_(std::move(settings)),
      url_(std::move(url)),
      dialect_{settings_.base_url.empty() ? std::string("The OpenAI Responses API")
                                          : "The Responses API at " + url_.host + ":" + std::to_string(url_.port),
               "x-request-id", read_openai_error_body},
      client_(std::move(executor), settings_.http) {}

awaitable<ModelResponse> ResponsesProvider::attempt(HttpRequest http, std::function<void()> on_progress) {
  ResponsesStreamAssembler assembler(dialect_.service, settings_.max_tokens);
  co_return co_await streamed_call_for_model(client_, std::move(http), dialect_, assembler, std::move(on_progress),
                                             settings_.model);
}

awaitable<ModelResponse> ResponsesProvider::complete(ModelRequest request) {
  HttpRequest http =
      bearer_event_stream_request(url_, settings_.api_key, json::serialize(responses_request_body(request, settings_)));
  // Not a coroutine lambda: it only starts attempt(), whose frame holds its own copy.
  ModelAttempt try_once = [this, &http, &request] { return attempt(http, request.on_progress); };
  ModelResponse response = co_await complete_with_retries_redacting(
      settings_.retry, dialect_.service, std::move(try_once), request.on_retry, settings_.api_key);
  co_return response;
}

}  // namespace deskd::model
