#include "runner/model/providers.h"

#include <vector>

#include "runner/http/http_client.h"
#include "runner/model/anthropic_provider.h"
#include "runner/model/openai_provider.h"
#include "runner/model/responses_provider.h"
#include "runner/model/script_provider.h"

namespace deskd::model {

namespace {

template <typename Provider>
Result<std::shared_ptr<ModelProvider>> as_model_provider(Result<std::unique_ptr<Provider>> made) {
  if (!made.ok()) return std::move(made).error();
  return std::shared_ptr<ModelProvider>(std::move(made).value());
}

Result<std::shared_ptr<ModelProvider>> make_script(boost::asio::any_io_executor, ProviderSettings settings) {
  if (!settings.script)
    return std::shared_ptr<ModelProvider>(std::make_shared<ScriptProvider>(ScriptProvider::embedded_demo()));
  DESKD_ASSIGN_OR_RETURN(auto script, ScriptProvider::load(*settings.script));
  return std::shared_ptr<ModelProvider>(std::make_shared<ScriptProvider>(std::move(script)));
}

Result<std::shared_ptr<ModelProvider>> make_anthropic(boost::asio::any_io_executor executor,
                                                      ProviderSettings settings) {
  return as_model_provider(AnthropicProvider::create(std::move(executor), std::move(settings)));
}

Result<std::shared_ptr<ModelProvider>> make_openai(boost::asio::any_io_executor executor, ProviderSettings settings) {
  if (settings.openai_api == "responses") {
    return as_model_provider(ResponsesProvider::create(std::move(executor), std::move(settings)));
  }
  return as_model_provider(OpenAiProvider::create(std::move(executor), std::move(settings)));
}

// The order is the one "'provider' must be one of script, anthropic, openai" lists.
constexpr ProviderKind kProviderKinds[] = {
    {.name = "script",
     .needs_model = false,
     .needs_key = KeyNeed::never,
     .extended_thinking = false,
     .responses_api = false,
     .make = make_script},
    {.name = "anthropic",
     .needs_model = true,
     .needs_key = KeyNeed::always,
     .extended_thinking = true,
     .responses_api = false,
     .make = make_anthropic},
    // OpenAI-compatible local servers (Ollama, llama.cpp, vLLM) on loopback take no key.
    // api = "responses" speaks OpenAI's Responses API instead of chat completions.
    {.name = "openai",
     .needs_model = true,
     .needs_key = KeyNeed::unless_loopback,
     .extended_thinking = false,
     .responses_api = true,
     .make = make_openai},
};

}  // namespace

std::span<const ProviderKind> provider_kinds() { return kProviderKinds; }

const ProviderKind* find_provider_kind(std::string_view name) {
  for (const ProviderKind& kind : kProviderKinds) {
    if (kind.name == name) return &kind;
  }
  return nullptr;
}

std::span<const std::string_view> provider_names() {
  static const std::vector<std::string_view> names = [] {
    std::vector<std::string_view> listed;
    for (const ProviderKind& kind : kProviderKinds) listed.push_back(kind.name);
    return listed;
  }();
  return names;
}

std::string provider_names_text() {
  std::string text;
  const auto names = provider_names();
  for (std::size_t index = 0; index < names.size(); ++index) {
    if (index > 0) text += index + 1 == names.size() ? " and " : ", ";
    text += names[index];
  }
  return text;
}

bool needs_api_key(const ProviderKind& kind, std::string_view base_url) {
  switch (kind.needs_key) {
    case KeyNeed::never: return false;
    case KeyNeed::always: return true;
    case KeyNeed::unless_loopback: {
      // Loopback as the HTTP client judges it, so "http://localhost.example" is not.
      const auto url = Url::parse(base_url);
      return !(url.ok() && url->scheme == "http" && is_loopback_host(url->host));
    }
  }
  return true;
}

}  // namespace deskd::model
