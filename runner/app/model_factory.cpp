#include "runner/app/model_factory.h"

#include "runner/model/script_provider.h"

namespace deskd::app {

Result<std::shared_ptr<model::ModelProvider>> make_model_provider(const ModelConfig& model) {
  if (model.provider == "script") {
    if (!model.script) return std::shared_ptr<model::ModelProvider>(std::make_shared<model::ScriptProvider>(model::ScriptProvider::embedded_demo()));
    DESKD_ASSIGN_OR_RETURN(auto script, model::ScriptProvider::load(*model.script));
    return std::shared_ptr<model::ModelProvider>(std::make_shared<model::ScriptProvider>(std::move(script)));
  }
  // Fails loudly: a desk configured for a provider this build lacks must not start.
  return Error::make(ErrorCode::unsupported, "The model provider '" + model.provider +
                                                 "' is not available in this build of deskd; use provider = \"script\".");
}

}  // namespace deskd::app
