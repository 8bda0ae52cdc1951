#pragma once
// One desk of the daemon, built from its config: its sandbox and tools, proposals, journal,
// session keeper, usage, market, skills, model, runtime and scheduler, with their files in
// <state folder>/desks/<name>/. The sandbox is tried once before the desk counts as
// started, so a desk that cannot be confined never runs (fail closed).

#include <boost/asio/any_io_executor.hpp>

#include <memory>
#include <optional>
#include <string>

#include "base/clock.h"
#include "base/result.h"
#include "policy/path_policy.h"
#include "runner/config/config.h"
#include "runner/daemon/desk_ids.h"
#include "runner/desk/desk_runtime.h"
#include "runner/desk/market_status.h"
#include "runner/desk/schedule.h"
#include "runner/desk/session_keeper.h"
#include "runner/desk/skill_library.h"
#include "runner/desk/subagent_board.h"
#include "runner/desk/usage_tracker.h"
#include "runner/egress/egress_proxy.h"
#include "runner/journal/journal.h"
#include "runner/tools/proposal_store.h"
#include "sandbox/disk_quota.h"

namespace deskd::app {

struct AssembledDesk {
  /// Declared first, so destroyed last: the mounts go once every sandbox of the desk has.
  sandbox::PlacesQuotaMounts quota_mounts;
  std::string model_description;  ///< "script", "anthropic:claude-..."
  std::shared_ptr<tools::ProposalStore> proposals;
  std::optional<policy::PathPolicy> path_policy;  ///< the desk's view, for accepting proposals
  std::optional<desk::Journal> journal;
  std::unique_ptr<desk::SessionKeeper> session_keeper;
  std::unique_ptr<desk::UsageTracker> usage_tracker;
  std::unique_ptr<desk::MarketStatus> market_status;
  std::unique_ptr<desk::SkillLibrary> skill_library;
  std::shared_ptr<desk::SubagentBoard> subagents;
  std::unique_ptr<desk::DeskRuntime> runtime;     ///< lent the parts above: destroyed first
  std::unique_ptr<desk::Scheduler> scheduler;
};

/// Publishes each refusal of a desk's egress proxy on `bus` as NETWORK_REFUSED (data: host,
/// port, why). `bus` must outlive the proxy's connections.
egress::RefusalSink network_refusal_publisher(desk::EventBus& bus, std::string desk_name);

/// The folder that holds a desk's journal, sessions, proposals and usage.
std::filesystem::path desk_state_folder(const Config& config, const std::string& desk_name);

/// Builds the desk and tries its sandbox once. The error says which step failed. `ids` are
/// the desk's own host uid and gid (desk_ids_for_desks), which a root deskd must give and an
/// unprivileged one must not; a root deskd's desk without them is refused (fail closed).
Result<std::unique_ptr<AssembledDesk>> assemble_desk(boost::asio::any_io_executor executor, const Config& config,
                                                     const DeskConfig& desk_config, std::optional<DeskIds> ids,
                                                     desk::EventBus& bus, const Clock& clock);

}  // namespace deskd::app
