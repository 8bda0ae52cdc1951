#pragma once
// The `openai` provider with `api = "responses"`: OpenAI's Responses API (POST
// {base_url}/responses), streamed, with the retries of the chat-completions provider
// (runner/model/retry.h). The models that exist only there (o1-pro, o3-pro, gpt-5-codex,
// gpt-5-pro, the deep-research models) need it. The wire format follows openai-python's
// types (src/openai/types/responses/: response_create_params.py, response_input_param.py,
// function_tool_param.py).
//
// Nothing is kept on OpenAI's side (store = false): every request carries the whole
// conversation, and a reasoning model's reasoning items go back with their
// encrypted_content (include: ["reasoning.encrypted_content"], OpenAI's guide "Reasoning
// models", "Encrypted reasoning items"), as a stateless client must pass them.

#include <boost/asio/any_io_executor.hpp>
#include <boost/json/array.hpp>
#include <boost/json/object.hpp>

#include <memory>

#include "base/result.h"
#include "runner/http/http_client.h"
#include "runner/model/model_provider.h"
#include "runner/model/provider_settings.h"
#include "runner/model/streamed_call.h"

namespace deskd::model {

/// The Responses API's input items for `request`'s messages: a user's text as
/// {"role": "user", "content"}, its tool_result blocks as {"type": "function_call_output",
/// "call_id", "output"} (first, "Error: " before a failed one's text); an assistant's
/// blocks in their order: openai_reasoning blocks as their reasoning item, text as
/// {"role": "assistant", "content"}, tool_use as {"type": "function_call", "call_id",
/// "name", "arguments"} (a JSON string). A reasoning item that nothing follows is left
/// out (the API refuses one without the item it led to). Other blocks are left out. For a
/// side question or a summary (no tools declared), tool calls and results become text.
boost::json::array responses_input(const ModelRequest& request);

/// The request body: {model, instructions?, input, tools?, stream: true, store: false,
/// include?: ["reasoning.encrypted_content"], max_output_tokens, temperature?}; tools (as
/// {"type": "function", "name", "description", "parameters", "strict": false}) only for
/// Purpose::turn; include unless settings.openai_encrypted_reasoning is false.
boost::json::object responses_request_body(const ModelRequest& request, const ProviderSettings& settings);

class ResponsesProvider final : public ModelProvider {
 public:
  /// A provider for `settings`; fails when the model is empty or the base_url is not
  /// https (or plain http to loopback).
  static Result<std::unique_ptr<ResponsesProvider>> create(boost::asio::any_io_executor executor,
                                                           ProviderSettings settings);

  /// Throws ProviderError (never holding the API key) or, on cancellation,
  /// boost::system::system_error(operation_aborted).
  boost::asio::awaitable<ModelResponse> complete(ModelRequest request) override;
  std::string describe() const override { return "openai:" + settings_.model + " (responses)"; }

 private:
  ResponsesProvider(boost::asio::any_io_executor executor, ProviderSettings settings, Url url);
  boost::asio::awaitable<ModelResponse> attempt(HttpRequest http, std::function<void()> on_progress);

  ProviderSettings settings_;
  Url url_;
  ApiDialect dialect_;
  HttpClient client_;
};

}  // namespace deskd::model
