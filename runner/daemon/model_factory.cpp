#include "runner/daemon/model_factory.h"

#include <cstdlib>
#include <fstream>
#include <iterator>

#include "runner/model/provider_settings.h"
#include "runner/model/providers.h"

namespace deskd::app {

namespace {

constexpr std::size_t kMaximumKeyFileBytes = 64 * 1024;

model::ProviderSettings provider_settings(const ModelConfig& model, std::string api_key) {
  model::ProviderSettings settings;
  settings.script = model.script;
  settings.model = model.model;
  settings.base_url = model.base_url;
  settings.api_key = std::move(api_key);
  settings.max_tokens = model.max_tokens;
  settings.openai_max_tokens_field = model.max_tokens_field;
  settings.openai_api = model.api;
  settings.openai_encrypted_reasoning = model.encrypted_reasoning;
  settings.thinking_budget_tokens = model.thinking_budget_tokens;
  settings.temperature = model.temperature;
  settings.http.ca_file = model.ca_file;
  settings.http.connect_timeout = model.connect_timeout;
  settings.http.idle_timeout = model.idle_timeout;
  settings.http.call_timeout = model.call_timeout;
  settings.retry.max_retries = model.max_retries;
  return settings;
}

}  // namespace

Result<std::string> load_api_key(const ModelConfig& model) {
  if (model.api_key_file) {
    std::ifstream file(*model.api_key_file, std::ios::binary);
    if (!file) {
      return Error::make(ErrorCode::not_found, "The API key file " + model.api_key_file->native() + " cannot be read.");
    }
    std::string key;
    key.resize(kMaximumKeyFileBytes + 1);
    file.read(key.data(), static_cast<std::streamsize>(key.size()));
    key.resize(static_cast<std::size_t>(file.gcount()));
    if (key.size() > kMaximumKeyFileBytes) {
      return Error::make(ErrorCode::invalid_argument, "The API key file " + model.api_key_file->native() + " is too large to be a key.");
    }
    const auto first = key.find_first_not_of(" \t\r\n");
    if (first == std::string::npos) {
      return Error::make(ErrorCode::invalid_argument, "The API key file " + model.api_key_file->native() + " is empty.");
    }
    key = key.substr(first, key.find_last_not_of(" \t\r\n") - first + 1);
    if (key.find_first_of("\r\n") != std::string::npos) {
      return Error::make(ErrorCode::invalid_argument,
                         "The API key file " + model.api_key_file->native() + " holds more than one line.");
    }
    return key;
  }
  if (!model.api_key_variable.empty()) {
    const char* value = std::getenv(model.api_key_variable.c_str());
    if (value == nullptr || *value == '\0') {
      return Error::make(ErrorCode::not_found,
                         "The API key variable " + model.api_key_variable + " is not set in deskd's environment.");
    }
    return std::string(value);
  }
  return std::string();
}

Result<std::shared_ptr<model::ModelProvider>> make_model_provider(boost::asio::any_io_executor executor,
                                                                  const ModelConfig& model) {
  const model::ProviderKind* kind = model::find_provider_kind(model.provider);
  if (kind == nullptr) {
    return Error::make(ErrorCode::unsupported, "There is no model provider '" + model.provider +
                                                   "'; the providers are " + model::provider_names_text() + ".");
  }
  // A provider that never takes a key never has one read, even when the config names one.
  std::string key;
  if (kind->needs_key != model::KeyNeed::never) {
    DESKD_ASSIGN_OR_RETURN(key, load_api_key(model));
  }
  return kind->make(std::move(executor), provider_settings(model, std::move(key)));
}

}  // namespace deskd::app
