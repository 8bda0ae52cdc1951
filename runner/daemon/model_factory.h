#pragma once
// The model provider a desk's [model] table names, and the API key it needs. The key is
// read by the daemon, from a file every desk hides or from deskd's own environment; it is
// handed to the provider only, never to a sandbox, a log line, an event or the journal.

#include <boost/asio/any_io_executor.hpp>

#include <memory>
#include <string>

#include "base/result.h"
#include "runner/config/config.h"
#include "runner/model/model_provider.h"

namespace deskd::app {

/// The key for `model`: the trimmed content of api_key_file, else the value of
/// api_key_variable in deskd's environment, else "" (a local server). Refuses an empty or
/// unreadable file and an unset variable, naming the file or the variable, never the key.
Result<std::string> load_api_key(const ModelConfig& model);

/// The provider for `model`; refuses a script that cannot be read, a key that cannot be
/// loaded, and a base URL the HTTP client refuses.
Result<std::shared_ptr<model::ModelProvider>> make_model_provider(boost::asio::any_io_executor executor,
                                                                  const ModelConfig& model);

}  // namespace deskd::app
