#pragma once
// The model provider a desk's [model] table names.

#include <memory>

#include "base/result.h"
#include "runner/app/config.h"
#include "runner/model/model_provider.h"

namespace deskd::app {

/// The provider for `model`; refuses a script that cannot be read and a provider this
/// build does not have.
Result<std::shared_ptr<model::ModelProvider>> make_model_provider(const ModelConfig& model);

}  // namespace deskd::app
