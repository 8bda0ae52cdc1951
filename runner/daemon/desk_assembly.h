#pragma once
// The one desk assembly, for `deskd serve` and `deskd run` alike (and its first step for
// `deskd shell` and `deskd mcp`): a desk's sandbox and tools, proposals, journal, session
// keeper, usage, market, skills, model (with its one system prompt), runtime and scheduler,
// with their files in its state folder (<state folder>/desks/<name>/ under the daemon).
// The sandbox is tried once before the desk counts as started, so a desk that cannot be
// confined never runs (fail closed).

#include <boost/asio/any_io_executor.hpp>

#include <memory>
#include <optional>
#include <string>

#include "base/clock.h"
#include "base/result.h"
#include "policy/path_policy.h"
#include "runner/config/config.h"
#include "runner/daemon/desk_ids.h"
#include "runner/desk/budget_keeper.h"
#include "runner/desk/desk_runtime.h"
#include "runner/desk/landlock_audit_reader.h"
#include "runner/desk/market_status.h"
#include "runner/desk/refusal_recorder.h"
#include "runner/desk/schedule.h"
#include "runner/desk/session_keeper.h"
#include "runner/desk/skill_library.h"
#include "runner/desk/subagent_board.h"
#include "runner/desk/usage_tracker.h"
#include "runner/egress/api_approvals.h"
#include "runner/egress/api_gate.h"
#include "runner/egress/egress_proxy.h"
#include "runner/journal/journal.h"
#include "runner/tools/proposal_store.h"
#include "sandbox/disk_quota.h"

namespace deskd::app {

struct AssembledDesk {
  /// Declared first, so destroyed last: the mounts go once every sandbox of the desk has.
  sandbox::PlacesQuotaMounts quota_mounts;
  std::string model_description;  ///< "script", "anthropic:claude-..."
  std::vector<std::string> tool_names;  ///< the desk's tools, for deskd's metrics' labels
  /// Every enforcer's refusals of the desk, as REFUSED events; its sandboxes' specs share it.
  std::shared_ptr<desk::DeskRefusalRecorder> refusals;
  std::shared_ptr<tools::ProposalStore> proposals;
  std::optional<policy::PathPolicy> path_policy;  ///< the desk's view, for accepting proposals
  std::optional<desk::Journal> journal;
  std::unique_ptr<desk::SessionKeeper> session_keeper;
  std::unique_ptr<desk::UsageTracker> usage_tracker;
  /// Its spend caps, over the usage tracker (declared after it, so destroyed before it).
  std::unique_ptr<desk::BudgetKeeper> budget;
  std::unique_ptr<desk::MarketStatus> market_status;
  std::unique_ptr<desk::SkillLibrary> skill_library;
  std::shared_ptr<desk::SubagentBoard> subagents;
  /// The desk's API calls held for a person (an `ask` rule of its API gate), named after the
  /// desk; read by /approvals, deskctl approvals, approve and deny. The gate asks on it.
  std::shared_ptr<egress::ApprovalBoard> approvals;
  std::unique_ptr<desk::DeskRuntime> runtime;  ///< lent the parts above: destroyed first
  std::unique_ptr<desk::Scheduler> scheduler;
};

/// Publishes each refusal of a desk's egress proxy on `bus` as NETWORK_REFUSED (data: host,
/// port, why). `bus` must outlive the proxy's connections.
/// With `reporter`, each is also told to it (a REFUSED event, folded and capped with the
/// desk's other refusals).
egress::RefusalSink network_refusal_publisher(desk::EventBus& bus, std::string desk_name,
                                              std::shared_ptr<sandbox::RefusalReporter> reporter = nullptr);

/// The folder that holds a desk's journal, sessions, proposals, usage and API ledger.
std::filesystem::path desk_state_folder(const Config& config, const std::string& desk_name);

/// The text of a desk's /approvals: each waiting call, its id, what it is and when it
/// expires, and how to decide it (daemon_api.cpp).
std::string describe_waiting_approvals(const std::vector<egress::PendingApproval>& waiting, Clock::TimePoint now);

/// Where a desk's parts tell what they measure (deskd's metrics); each may be empty.
struct DeskMeasures {
  sandbox::SandboxStartObserver sandbox_started = {};  ///< each sandbox of the desk, subagents' too
  desk::Journal::FsyncObserver journal_fsynced = {};
  desk::UsageTracker::RequestObserver model_requests = {};
  egress::EgressOutcomeObserver egress_outcomes = {};  ///< its egress proxy's requests not refused
};

/// What a desk is assembled from: the daemon fills it from deskd.toml, `deskd run` from its
/// command line (runner/app/desk_tool_options.h), so both build the very same desk.
struct DeskAssemblyInput {
  const DeskConfig& desk;
  /// Its journal, sessions, usage, schedules, quota mounts and (by default) proposals.
  std::filesystem::path state_folder;
  /// Where proposals go instead of state_folder/proposals; never a place the desk can write.
  std::optional<std::filesystem::path> proposals_folder = {};
  /// The desk's own host uid and gid, which a root deskd must give (desk_ids_for_desks, or
  /// the ad-hoc commands' kAdHocDeskUid) and an unprivileged one must not.
  std::optional<DeskIds> ids = {};
  /// Where the egress proxy's refusals go; by default NETWORK_REFUSED on the desk's bus.
  egress::RefusalSink refusals = {};
  /// Where every enforcer of the desk tells its refusals (the spec's `refusals`); none: nowhere.
  std::shared_ptr<sandbox::RefusalReporter> refusal_reporter = {};
  /// The daemon's reader of Landlock's audit records (a root deskd's); none: not reported.
  std::shared_ptr<desk::LandlockAuditReader> landlock_audit = {};
  /// For a desk that names APIs: where its gate's requests wait for a person (a board of
  /// its own when none), where its events go (none: not published), and its clock.
  std::shared_ptr<egress::ApprovalBoard> approvals = {};
  egress::ApiEventSink api_events = {};
  std::shared_ptr<const Clock> clock = {};
  DeskMeasures measures = {};
};

/// The first step of every desk, also all that `deskd shell` and `deskd mcp` need: the
/// sandbox spec of `input.desk` (its confinement, its settings, its ids), its writable
/// places prepared, and under network = "allowlist" its egress proxy on `executor`. A root
/// deskd's desk without ids is refused (fail closed). The error says which step failed.
Result<sandbox::SandboxSpec> assemble_desk_sandbox(boost::asio::any_io_executor executor,
                                                   const DeskAssemblyInput& input);

/// Builds the whole desk (the sandbox as above, its quota, tools, model, runtime and
/// scheduler) and tries its sandbox once. The error says which step failed.
Result<std::unique_ptr<AssembledDesk>> assemble_desk(boost::asio::any_io_executor executor, DeskAssemblyInput input,
                                                     desk::EventBus& bus, const Clock& clock);

}  // namespace deskd::app
