#pragma once
// The one table of model providers: each row is a name a [model] table's `provider` may take,
// what the config must hold for it (a model name, an API key), whether it has extended
// thinking, and how it is built. The config reader (runner/config/) checks `provider` and the
// [model] keys against it; the daemon's model factory (runner/daemon/model_factory.cpp) builds
// from it. A new provider is a row here, its provider files and their tests.
//
// The table is in runner/model because both its readers may use model (config → model,
// daemon → model) and neither may be used by it. So its factory takes ProviderSettings, not
// the config's ModelConfig, which model may not include: the daemon turns the one into the
// other and loads the key the row asks for.

#include <boost/asio/any_io_executor.hpp>

#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "base/result.h"
#include "runner/model/model_provider.h"
#include "runner/model/provider_settings.h"

namespace deskd::model {

/// When a provider needs an API key (api_key_file or api_key_variable).
enum class KeyNeed {
  never,            ///< no key is ever read (the script)
  always,           ///< a key, wherever base_url points
  unless_loopback,  ///< a key, but for a plain-http base_url on loopback: a local server (Ollama, vLLM)
};

struct ProviderKind {
  std::string_view name = {};  ///< as written in `provider = "..."`
  bool needs_model = false;    ///< a 'model' must be named
  KeyNeed needs_key = KeyNeed::never;
  bool extended_thinking = false;  ///< `thinking = { budget_tokens = N }` is accepted
  /// `api = "responses"` is accepted: the provider also speaks OpenAI's Responses API.
  bool responses_api = false;
  /// Builds the provider; refuses what the provider's own create() or load() refuses.
  Result<std::shared_ptr<ModelProvider>> (*make)(boost::asio::any_io_executor executor,
                                                 ProviderSettings settings) = nullptr;
};

/// Every row, in the order the config's error lists them: script, anthropic, openai.
std::span<const ProviderKind> provider_kinds();

/// The row named `name`; nullptr when there is none.
const ProviderKind* find_provider_kind(std::string_view name);

/// The rows' names, in the table's order, for the config's choice of `provider`.
std::span<const std::string_view> provider_names();

/// The rows' names for a sentence: "script, anthropic and openai".
std::string provider_names_text();

/// Whether `kind` needs an API key when its base_url is `base_url` ("" for the public endpoint).
bool needs_api_key(const ProviderKind& kind, std::string_view base_url);

}  // namespace deskd::model
