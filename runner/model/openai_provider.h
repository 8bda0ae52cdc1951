#pragma once
// The `openai` provider: the chat-completions API (POST {base_url}/chat/completions),
// streamed, with retries (runner/model/retry.h). base_url defaults to
// https://api.openai.com/v1 and includes the version path, so a local server is named the
// way it documents itself: http://127.0.0.1:11434/v1 for Ollama. An empty API key sends
// no Authorization header (local servers need none).
//
// The limit is sent as "max_completion_tokens", the name OpenAI's API reads for every
// model (GPT-5 and the o-series refuse "max_tokens"); ProviderSettings::
// openai_max_tokens_field sends "max_tokens" instead, for local servers that read only that.

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

/// The chat-completions messages for `request`: the system prompt first; a user
/// message's tool_result blocks become "tool" messages (content prefixed "Error: " when
/// is_error), and its text blocks (the user's words, or steering that arrived with the
/// results) a "user" message after them; an assistant message carries its text (null
/// when it only calls tools) and its tool_use blocks as tool_calls with JSON-string
/// arguments, and its reasoning_content block (a compatible server's reasoning) as
/// "reasoning_content" when it calls tools or follows tool results before the user spoke
/// again (DeepSeek's thinking mode needs it there and refuses it elsewhere). Blocks of
/// other types are left out.
boost::json::array openai_messages(const ModelRequest& request);

/// The request body: {model, messages, tools?, stream, stream_options: {include_usage},
/// max_completion_tokens (or max_tokens), temperature?}; tools only for Purpose::turn.
boost::json::object openai_request_body(const ModelRequest& request, const ProviderSettings& settings);

class OpenAiProvider final : public ModelProvider {
 public:
  /// A provider for `settings`; fails when the model is empty or the base_url is not
  /// https (or plain http to loopback).
  static Result<std::unique_ptr<OpenAiProvider>> create(boost::asio::any_io_executor executor, ProviderSettings settings);

  /// Throws ProviderError (never holding the API key) or, on cancellation,
  /// boost::system::system_error(operation_aborted).
  boost::asio::awaitable<ModelResponse> complete(ModelRequest request) override;
  std::string describe() const override { return "openai:" + settings_.model; }

 private:
  OpenAiProvider(boost::asio::any_io_executor executor, ProviderSettings settings, Url url);
  boost::asio::awaitable<ModelResponse> attempt(HttpRequest http, std::function<void()> on_progress);

  ProviderSettings settings_;
  Url url_;
  ApiDialect dialect_;
  HttpClient client_;
};

}  // namespace deskd::model
