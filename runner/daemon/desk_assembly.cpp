#include "runner/daemon/desk_assembly.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>

#include "base/unique_fd.h"
#include "runner/daemon/desk_api_gate.h"
#include "runner/daemon/desk_ids.h"
#include "runner/daemon/deskd_log.h"
#include "runner/daemon/model_factory.h"
#include "runner/egress/egress_proxy.h"
#include "runner/model/model_turn_runner.h"
#include "runner/model/script_provider.h"
#include "runner/model/subagent_tool.h"
#include "runner/tools/desk_tools.h"
#include "sandbox/desk_preparation.h"
#include "sandbox/disk_quota.h"
#include "sandbox/file_opener.h"
#include "sandbox/launcher.h"

namespace deskd::app {

namespace {

Error step_failed(const std::string& step, const Error& error) {
  return Error{error.code, error.error_number, step + ": " + error.what};
}

// Starts `true` in the desk's sandbox once: a desk whose isolation cannot be set up on this
// host must not start at all, rather than fail at its first bash command.
Result<void> try_sandbox(const sandbox::SandboxSpec& spec) {
  UniqueFd null_fd(::open("/dev/null", O_RDWR | O_CLOEXEC));
  if (!null_fd) return Error::from_errno(errno, "open /dev/null");
  sandbox::StandardStreams streams{null_fd.get(), null_fd.get(), null_fd.get()};
  // In a desk cgroup of its own, with the desk's limits: nothing else of the desk runs in
  // it, so the launch may share deskd's memory instead of copying it (launcher.cpp,
  // sharing_memory_is_safe), which a thousand desks' start depends on.
  sandbox::SandboxSpec alone = spec;
  alone.desk_cgroup = std::make_shared<sandbox::DeskCgroupSlot>(sandbox::DeskCgroupSlot::Use::alone);
  DESKD_ASSIGN_OR_RETURN(auto process, sandbox::launch_sandboxed(alone, {"true"}, streams));
  DESKD_ASSIGN_OR_RETURN(auto status, process.wait_for(std::chrono::seconds(20)));
  if (!status) {
    (void)process.signal(SIGKILL);
    return Error::make(ErrorCode::system, "`true` did not finish within 20 s in the sandbox.");
  }
  if (*status != 0) {
    return Error::make(ErrorCode::system, "`true` exited with status " + std::to_string(*status) + " in the sandbox.");
  }
  // The file tools' opener is the same sandbox (the same start(): namespaces, mounts,
  // landlock, seccomp, cgroup), only its init runs in files mode; it is not tried here too.
  // A second launch per desk doubled what a thousand desks take to start, and an opener
  // that cannot start fails closed anyway: each file tool call says why, and reads nothing.
  return success();
}

desk::PriceTable price_table(const ModelConfig& model) {
  desk::PriceTable table;
  for (const auto& [name, price] : model.prices) {
    table[name] = desk::ModelPrice{price.input, price.output, price.cache_read, price.cache_write};
  }
  return table;
}

std::string system_prompt(const DeskConfig& desk) {
  return "You run the " + desk.name + " desk, in " + desk.mode +
         " mode. Your folder is " + desk.directory.native() +
         "; you may write only Memory.md, memory/, notes/ and scratch/ there. Propose changes to other files "
         "with propose_file_change.";
}

std::string subagent_prompt(const DeskConfig& desk) {
  return "You are a subagent of the " + desk.name + " desk, given one task by the desk's model. Your folder is " +
         desk.directory.native() +
         "; you may write only Memory.md, memory/, notes/ and scratch/ there. Do the task with your tools, then answer "
         "with what the desk asked for: your final answer is all it reads.";
}

// What start_subagent needs of the desk: a model for each subagent, and a fresh tool set
// from the desk's own tool settings — a second sandbox from the same SandboxSpec, never more.
void add_subagent_tool(boost::asio::any_io_executor executor, const DeskConfig& desk_config,
                       const tools::DeskToolSettings& tool_settings, std::shared_ptr<model::ModelProvider> provider,
                       AssembledDesk& desk, const Clock& clock, tools::ToolRegistry& registry) {
  desk.subagents = std::make_shared<desk::SubagentBoard>(desk_config.maximum_subagents);
  if (desk_config.maximum_subagents == 0) return;
  auto make_tools =
      [executor, tool_settings](const std::vector<std::string>& names) -> Result<std::shared_ptr<tools::ToolRegistry>> {
    auto tools = std::make_shared<tools::ToolRegistry>(tools::make_desk_tools(executor, tool_settings));
    if (!names.empty()) DESKD_RETURN_IF_ERROR(tools->keep_only(names));
    return tools;
  };
  // The script model plays the script's lines for the subagent's task; a real provider is
  // built again from the desk's [model] (its own connection), the same model and key.
  auto make_provider = [executor, model = desk_config.model,
                        provider](const std::string& task) -> Result<std::shared_ptr<model::ModelProvider>> {
    if (auto* script = dynamic_cast<model::ScriptProvider*>(provider.get())) {
      return std::shared_ptr<model::ModelProvider>(script->for_subagent(task));
    }
    return make_model_provider(executor, model);
  };
  model::SubagentSettings settings;
  settings.system_prompt = subagent_prompt(desk_config);
  registry.add(std::make_unique<model::StartSubagentTool>(desk.subagents, std::move(make_provider),
                                                          std::move(make_tools), desk.usage_tracker.get(),
                                                          desk.budget.get(), clock,
                                                          std::move(settings)));
}

}  // namespace

// NETWORK_REFUSED stays as it was (its readers and its own rate limit are older than
// REFUSED); the refusal is also told to the desk's recorder, so that `deskctl refusals` and
// the tool result see every enforcer alike. Both are capped, so neither floods.
egress::RefusalSink network_refusal_publisher(desk::EventBus& bus, std::string desk_name,
                                              std::shared_ptr<sandbox::RefusalReporter> reporter) {
  return [&bus, desk_name = std::move(desk_name),
          reporter = std::move(reporter)](const egress::EgressRefusal& refusal) {
    boost::json::object data{{"host", refusal.host}, {"port", refusal.port}, {"why", refusal.why}};
    if (refusal.unreported_before > 0) data["unreported_before"] = refusal.unreported_before;
    bus.publish(desk_name, desk::event_kind::kNetworkRefused, std::move(data));
    if (reporter) {
      reporter->record(sandbox::Refusal{sandbox::Enforcer::egress, refusal.host + ":" + std::to_string(refusal.port),
                                        "", refusal.why, std::nullopt});
    }
  };
}

namespace {

// API_REFUSED as the gate publishes it, told to the recorder too (see above).
void record_api_refusal(sandbox::RefusalReporter& reporter, const boost::json::object& data) {
  const auto text = [&](const char* field) {
    const boost::json::value* value = data.if_contains(field);
    return value != nullptr && value->is_string() ? std::string(value->as_string()) : std::string();
  };
  reporter.record(sandbox::Refusal{sandbox::Enforcer::api_gate, text("api") + " " + text("method") + " " + text("url"),
                                   "", text("why"), std::nullopt});
}

}  // namespace

std::filesystem::path desk_state_folder(const Config& config, const std::string& desk_name) {
  return config.runner.state_folder / "desks" / desk_name;
}

Result<sandbox::SandboxSpec> assemble_desk_sandbox(boost::asio::any_io_executor executor,
                                                   const DeskAssemblyInput& input) {
  const DeskConfig& desk_config = input.desk;
  // The config's own value, as the config decided it for this desk; only the ids of a root
  // deskd's desk are chosen now (for every desk the daemon starts at once, in one lock and
  // one write of the files: desk_ids_for_desks).
  sandbox::SandboxSettings sandbox_settings = desk_config.sandbox;
  if (::geteuid() == 0 && !input.ids) {
    return Error::make(ErrorCode::internal, "choosing the desk's uid: a root deskd runs each desk as a uid of its "
                                            "own, and none was chosen for desk '" + desk_config.name + "'.");
  }
  if (input.ids) {
    sandbox_settings.uid = input.ids->uid;
    sandbox_settings.gid = input.ids->gid;
  }
  auto spec = sandbox::build_desk_sandbox_spec(desk_config.directory, desk_config.hidden_paths, sandbox_settings);
  if (!spec.ok()) return step_failed("building the sandbox", spec.error());
  std::shared_ptr<egress::ApiGate> gate;
  if (!desk_config.apis.empty()) {
    static const SystemClock kSystemClock;
    DeskApiGateInput gate_input{desk_config, input.state_folder, input.approvals,
                                input.clock ? input.clock : std::shared_ptr<const Clock>(&kSystemClock, [](const Clock*) {}),
                                input.api_events};
    auto made = make_desk_api_gate(gate_input, *spec);
    if (!made.ok()) return step_failed("setting up the API gate", made.error());
    gate = std::move(made).value();
  }
  spec->refusals = input.refusal_reporter;
  spec->started = input.measures.sandbox_started;
  auto proxied =
      egress::attach_egress_proxy(*spec, executor, input.refusals, std::move(gate), input.measures.egress_outcomes);
  if (!proxied.ok()) return step_failed("setting up the egress proxy", proxied.error());
  return spec;
}

Result<std::unique_ptr<AssembledDesk>> assemble_desk(boost::asio::any_io_executor executor, DeskAssemblyInput input,
                                                     desk::EventBus& bus, const Clock& clock) {
  const DeskConfig& desk_config = input.desk;
  const sandbox::SandboxSettings& sandbox_settings = desk_config.sandbox;
  auto desk = std::make_unique<AssembledDesk>();
  const std::filesystem::path& state = input.state_folder;
  std::error_code error;
  std::filesystem::create_directories(state, error);
  if (error)
    return Error::make(ErrorCode::system, "creating the state folder " + state.native() + ": " + error.message());

  desk->refusals = desk::DeskRefusalRecorder::create(executor, bus, desk_config.name, clock, input.landlock_audit);
  input.refusal_reporter = desk->refusals;
  if (!input.refusals) input.refusals = network_refusal_publisher(bus, desk_config.name, desk->refusals);
  desk->approvals = std::make_shared<egress::ApprovalBoard>(desk_config.name);
  input.approvals = desk->approvals;
  // The daemon's clock outlives every desk.
  input.clock = std::shared_ptr<const Clock>(&clock, [](const Clock*) {});
  input.api_events = [&bus, name = desk_config.name, recorder = desk->refusals](const std::string& kind,
                                                                                boost::json::object data) {
    if (kind == desk::event_kind::kApiRefused) record_api_refusal(*recorder, data);
    bus.publish(name, kind, std::move(data));
  };
  auto spec = assemble_desk_sandbox(executor, input);
  if (!spec.ok()) return std::move(spec).error();
  if (sandbox_settings.disk_quota_bytes) {
    // One inode per 16 KiB unless the config says otherwise, as mkfs would for small files.
    const sandbox::DiskQuota quota{*sandbox_settings.disk_quota_bytes,
                                   sandbox_settings.inode_quota.value_or(*sandbox_settings.disk_quota_bytes / 16384)};
    auto given = sandbox::give_places_a_quota(*spec, state / "quota", quota,
                                              [name = desk_config.name](const std::string& problem) {
                                                if (auto log = DeskdLog::installed())
                                                  return log->error(problem, about_desk(name));
                                                std::fprintf(stderr, "deskd: %s\n", problem.c_str());
                                              });
    if (!given.ok()) return step_failed("giving the desk its disk quota", given.error());
    desk->quota_mounts = std::move(given).value();
  }
  if (auto tried = try_sandbox(*spec); !tried.ok()) return step_failed("starting the sandbox", tried.error());

  // The one confinement of the desk: the sandbox's, also behind the accepting of proposals,
  // whose paths are resolved again in the desk's own view (a file opener of its own,
  // started only when a proposal is accepted).
  desk->path_policy.emplace(spec->confinement, std::make_shared<sandbox::FileOpener>(*spec));

  auto proposals_folder =
      tools::proposals_folder_outside(spec->confinement, input.proposals_folder.value_or(state / "proposals"));
  if (!proposals_folder.ok()) return step_failed("opening the proposals", proposals_folder.error());
  // The clock outlives every desk (the daemon owns both); the store only needs to read it.
  auto proposals = tools::ProposalStore::open(
      *proposals_folder, std::shared_ptr<const Clock>(&clock, [](const Clock*) {}), desk_config.proposable_paths);
  if (!proposals.ok()) return step_failed("opening the proposals", proposals.error());
  desk->proposals = *proposals;

  auto journal = desk::Journal::open(state / "journal.jsonl");
  if (!journal.ok()) return step_failed("opening the journal", journal.error());
  desk->journal.emplace(std::move(journal).value());
  if (input.measures.journal_fsynced) desk->journal->tell_fsyncs_to(input.measures.journal_fsynced);

  desk->session_keeper = std::make_unique<desk::SessionKeeper>(state / "sessions", clock);
  desk->usage_tracker = std::make_unique<desk::UsageTracker>(clock, state / "usage.json", price_table(desk_config.model),
                                                         desk_config.model.model);
  if (input.measures.model_requests) desk->usage_tracker->tell_requests_to(input.measures.model_requests);
  (void)desk->usage_tracker->load();  // a damaged file starts the day empty; record() replaces it
  desk->budget = std::make_unique<desk::BudgetKeeper>(clock, *desk->usage_tracker, desk_config.budget,
                                                      desk_config.model.max_tokens, state / "budget.json");
  // A damaged raise file counts as no raise: the configured caps hold (fail closed).
  if (auto loaded = desk->budget->load(); !loaded.ok()) {
    if (auto log = DeskdLog::installed()) log->error(loaded.error().what, about_desk(desk_config.name));
  }
  desk->market_status = std::make_unique<desk::MarketStatus>();
  if (desk_config.market_holidays) {
    auto market = desk::MarketStatus::load(*desk_config.market_holidays);
    if (!market.ok()) return step_failed("reading the market holidays", market.error());
    *desk->market_status = std::move(market).value();
  }
  desk->skill_library = std::make_unique<desk::SkillLibrary>(
      desk_config.skills_folder ? desk::SkillLibrary::scan_folder(*desk_config.skills_folder)
                                : desk::SkillLibrary::scan(desk_config.directory));

  tools::DeskToolSettings tool_settings{std::move(spec).value(), desk_config.timeout_seconds,
                                        desk_config.maximum_output_characters, desk_config.name, desk->proposals,
                                        desk_config.idle_terminal};
  auto registry = std::make_shared<tools::ToolRegistry>(tools::make_desk_tools(executor, tool_settings));

  auto provider = make_model_provider(executor, desk_config.model);
  if (!provider.ok()) return step_failed("setting up the model", provider.error());
  add_subagent_tool(executor, desk_config, tool_settings, *provider, *desk, clock, *registry);
  desk->model_description = (*provider)->describe();
  for (const auto& tool : registry->tools()) desk->tool_names.emplace_back(tool->name());
  model::TurnRunnerSettings runner_settings;
  runner_settings.system_prompt = system_prompt(desk_config);
  runner_settings.context_window_tokens = desk_config.model.context_window;
  runner_settings.compaction_share = desk_config.model.compaction_share;
  runner_settings.max_tokens = desk_config.model.max_tokens;
  runner_settings.continue_after_max_tokens = desk_config.model.continue_after_max_tokens;
  auto runner = std::make_shared<model::ModelTurnRunner>(*provider, registry, runner_settings,
                                                         desk->session_keeper.get(), desk->usage_tracker.get(),
                                                         desk->budget.get());

  desk::DeskParts parts;
  parts.tool_registry = registry;
  parts.session_keeper = desk->session_keeper.get();
  parts.skill_library = desk->skill_library.get();
  parts.usage_tracker = desk->usage_tracker.get();
  parts.budget = desk->budget.get();
  parts.market_status = desk->market_status.get();
  parts.journal = &*desk->journal;
  parts.subagents = desk->subagents.get();
  parts.tools_text = tools::describe_tool_reach(*registry, tool_settings.sandbox);
  // The board is thread-safe and lives as long as the desk; the runtime (destroyed first)
  // reads it only while it runs.
  parts.approvals_text = [board = desk->approvals.get(), &clock] {
    return describe_waiting_approvals(board->pending(), clock.now());
  };
  desk::DeskSettings settings{desk_config.name, desk_config.mode, desk_config.stall_timeout,
                              egress::describe_network(sandbox_settings)};
  desk->runtime = std::make_unique<desk::DeskRuntime>(executor, settings, bus, runner, clock, parts);

  desk::SchedulerSettings schedule_settings{desk_config.name, state / "schedules.json", state / "journal.jsonl",
                                            desk_config.catch_up_window, desk->market_status.get()};
  desk::DeskRuntime* runtime = desk->runtime.get();
  desk->scheduler = std::make_unique<desk::Scheduler>(
      executor, desk_config.schedules, schedule_settings,
      [runtime](desk::Trigger trigger, desk::Scheduler::Acknowledgement acknowledged) {
        runtime->submit(std::move(trigger), std::move(acknowledged));
      },
      bus, clock);
  return desk;
}

}  // namespace deskd::app
