#pragma once
// A desk's API gate, as the desk assembly makes it when the desk names [[api]]s: its ledger
// in the desk's state folder, its approvals, its market calendar for time windows, its
// placeholders in the sandbox's environment and its CA in the sandbox's trust bundle.

#include <filesystem>
#include <memory>

#include "base/clock.h"
#include "base/result.h"
#include "runner/config/config.h"
#include "runner/egress/api_gate.h"
#include "sandbox/sandbox_spec.h"

namespace deskd::app {

struct DeskApiGateInput {
  const DeskConfig& desk;
  std::filesystem::path state_folder;
  std::shared_ptr<egress::ApprovalBoard> approvals;
  std::shared_ptr<const Clock> clock;
  egress::ApiEventSink events;
};

/// The gate of `input.desk` (which names at least one API), and `spec` made ready for it:
/// the placeholders in its environment, the desk's trust bundle (written to the state
/// folder) as its trust_bundle. The error names the step.
Result<std::shared_ptr<egress::ApiGate>> make_desk_api_gate(const DeskApiGateInput& input, sandbox::SandboxSpec& spec);

}  // namespace deskd::app
