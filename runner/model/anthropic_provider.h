#pragma once
// The `anthropic` provider: the Messages API (POST {base_url}/v1/messages), streamed, with
// retries (runner/model/retry.h). base_url defaults to https://api.anthropic.com and is
// given without "/v1", as in Anthropic's own SDKs.
//
// Prompt caching: the system prompt, the last tool and the last message carry
// cache_control breakpoints, so each round of an agent turn reads the conversation so far
// from the cache instead of paying for it again (usage.cache_read_tokens shows it).

#include <boost/asio/any_io_executor.hpp>
#include <boost/json/object.hpp>

#include <memory>

#include "base/result.h"
#include "runner/http/http_client.h"
#include "runner/model/model_provider.h"
#include "runner/model/provider_settings.h"
#include "runner/model/streamed_call.h"

namespace deskd::model {

/// The request body for `request`: {model, max_tokens, system, messages, tools, stream,
/// thinking?, temperature?}. Tools and thinking are sent only for Purpose::turn; without
/// tools, the API refuses tool_use and tool_result blocks, so they are sent as text
/// instead, and thinking and server tool blocks are left out. A turn's thinking blocks
/// are sent back unchanged.
boost::json::object anthropic_request_body(const ModelRequest& request, const ProviderSettings& settings);

class AnthropicProvider final : public ModelProvider {
 public:
  /// A provider for `settings`; fails when the model is empty or the base_url is not
  /// https (or plain http to loopback).
  static Result<std::unique_ptr<AnthropicProvider>> create(boost::asio::any_io_executor executor,
                                                           ProviderSettings settings);

  /// Throws ProviderError (never holding the API key) or, on cancellation,
  /// boost::system::system_error(operation_aborted).
  boost::asio::awaitable<ModelResponse> complete(ModelRequest request) override;
  std::string describe() const override { return "anthropic:" + settings_.model; }

 private:
  AnthropicProvider(boost::asio::any_io_executor executor, ProviderSettings settings, Url url);
  boost::asio::awaitable<ModelResponse> attempt(HttpRequest http, std::function<void()> on_progress);

  ProviderSettings settings_;
  Url url_;
  ApiDialect dialect_;
  HttpClient client_;
};

}  // namespace deskd::model
