#pragma once
// What a model provider needs, built from a desk's [model] table: for the script, its
// replies; for the HTTP providers (anthropic, openai), where to send, the key, the limits,
// and how to retry.

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

#include "runner/http/http_client.h"

namespace deskd::model {

struct RetryPolicy {
  std::uint32_t max_retries = 4;  ///< retries after the first attempt
  std::chrono::milliseconds base_delay{500};   ///< doubled each retry, with full jitter
  std::chrono::milliseconds max_delay{30000};  ///< also caps a server's retry-after
};

struct ProviderSettings {
  std::optional<std::filesystem::path> script;  ///< script: JSON-lines replies; none: the embedded demo
  std::string model;     ///< e.g. "claude-sonnet-4-5", "gpt-4.1", "llama3"
  std::string base_url;  ///< "" means the public endpoint: https://api.anthropic.com or https://api.openai.com/v1
  std::string api_key;   ///< never logged, never in an event, an error message or a sandbox; may be "" for local servers
  std::uint32_t max_tokens = 8192;
  std::optional<double> temperature;
  /// openai: the name the limit is sent under. OpenAI's own API wants
  /// "max_completion_tokens" (its reasoning models refuse "max_tokens"); some
  /// OpenAI-compatible local servers read only "max_tokens".
  std::string openai_max_tokens_field = "max_completion_tokens";
  /// openai: the API spoken, "chat_completions" (POST /chat/completions, every compatible
  /// server) or "responses" (POST /responses: OpenAI's own, and the models that exist only there).
  std::string openai_api = "chat_completions";
  /// openai with api "responses": ask for the reasoning items' encrypted content and send
  /// it back (the API keeps nothing, store = false). Models that do not reason (gpt-4.1,
  /// gpt-4o) refuse the request for it ("Encrypted content is not supported with this model").
  bool openai_encrypted_reasoning = true;
  /// anthropic: extended thinking's budget in tokens (at least 1024, below max_tokens);
  /// nullopt: no extended thinking.
  std::optional<std::uint32_t> thinking_budget_tokens;
  HttpSettings http;
  RetryPolicy retry;
};

}  // namespace deskd::model
