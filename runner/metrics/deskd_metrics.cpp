#include "runner/metrics/deskd_metrics.h"

#include <algorithm>
#include <array>
#include <mutex>

#include "runner/metrics/process_sample.h"
#include "runner/metrics/prometheus_text.h"

namespace deskd::metrics {

namespace {

using namespace std::string_view_literals;

// The fixed label values. A value an event carries that is not here is counted as "other".
constexpr std::array kDeskStates = {"starting"sv, "idle"sv, "running"sv, "paused"sv, "stopped"sv, "failed"sv};
// sandbox/refusal_report.h's enforcer_name().
constexpr std::array kEnforcers = {"seccomp"sv,  "landlock"sv, "path_policy"sv, "egress"sv,
                                   "api_gate"sv, "limit"sv,    "other"sv};
// The outcomes of runner/egress/api_exchange.cpp's ledger entries.
constexpr std::array kApiOutcomes = {"allowed"sv, "answered"sv,  "asked"sv,           "approved"sv, "denied"sv,
                                     "refused"sv, "timed_out"sv, "failed_upstream"sv, "other"sv};
// NETWORK_REFUSED events, and the proxy's outcomes (runner/egress/egress_proxy.h).
constexpr std::array kEgressOutcomes = {"allowed"sv, "failed"sv, "refused"sv};
constexpr std::string_view kUnknownTool = "unknown";
constexpr std::string_view kOtherModel = "other";

// Seconds: a sandbox starts in tens of milliseconds, and a loaded host may take seconds.
const std::vector<double> kSandboxStartBounds = {0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10};
// An fsync on a quiet SSD takes well under a millisecond; a busy disk, up to a second.
const std::vector<double> kFsyncBounds = {0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01,
                                          0.025,  0.05,    0.1,    0.25,  0.5,    1};

template <std::size_t N>
std::string_view fixed_label(const std::array<std::string_view, N>& values, std::string_view value) {
  const auto found = std::find(values.begin(), values.end(), value);
  return found != values.end() ? *found : values.back();
}

// A model name as providers write them ("claude-sonnet-4-5", "gpt-4.1", "org/model:tag").
bool model_name_is_plain(std::string_view model) {
  if (model.empty() || model.size() > 100) return false;
  return std::all_of(model.begin(), model.end(), [](char character) {
    return (character >= 'a' && character <= 'z') || (character >= 'A' && character <= 'Z') ||
           (character >= '0' && character <= '9') ||
           std::string_view("._:/@+-").find(character) != std::string_view::npos;
  });
}

std::string_view string_field(const desk::Event& event, std::string_view name) {
  const auto* value = event.data.if_contains(name);
  if (value == nullptr || !value->is_string()) return {};
  const auto& text = value->get_string();
  return std::string_view(text.data(), text.size());
}

bool flag(const desk::Event& event, std::string_view name) {
  const auto* value = event.data.if_contains(name);
  return value != nullptr && value->is_bool() && value->get_bool();
}

// A rate-limited report stands for itself and the ones it held back.
double reported_count(const desk::Event& event) {
  const auto* held = event.data.if_contains("unreported_before");
  if (held == nullptr) held = event.data.if_contains("dropped_before");
  std::uint64_t before = 0;
  if (held != nullptr && held->is_uint64()) before = held->get_uint64();
  if (held != nullptr && held->is_int64() && held->get_int64() > 0)
    before = static_cast<std::uint64_t>(held->get_int64());
  return 1 + static_cast<double>(before);
}

void add_to(Counter* counter, double amount = 1) {
  if (counter != nullptr) counter->add(amount);
}

constexpr std::size_t kDesksTimesTools = kMaximumDesks * (kMaximumToolsPerDesk + 1);
constexpr std::size_t kDesksTimesModels = kMaximumDesks * (kMaximumModelsPerDesk + 1);

}  // namespace

DeskdMetrics::DeskdMetrics()
    : desks_by_state_(
          registry_.add("deskd_desks", "Desks by state.", MetricType::gauge, {"state"}, kDeskStates.size())),
      desk_queue_(registry_.add("deskd_desk_queued_triggers", "Triggers waiting in a desk's queue.", MetricType::gauge,
                                {"desk"}, kMaximumDesks)),
      turns_started_(registry_.add("deskd_turns_started_total", "Turns a desk started.", MetricType::counter, {"desk"},
                                   kMaximumDesks)),
      turns_finished_(registry_.add("deskd_turns_finished_total", "Turns a desk finished with a reply.",
                                    MetricType::counter, {"desk"}, kMaximumDesks)),
      turns_failed_(registry_.add("deskd_turns_failed_total", "Turns that failed.", MetricType::counter, {"desk"},
                                  kMaximumDesks)),
      turns_stopped_(registry_.add("deskd_turns_stopped_total", "Turns that were stopped.", MetricType::counter,
                                   {"desk"}, kMaximumDesks)),
      tool_calls_(registry_.add("deskd_tool_calls_total",
                                "Tool calls, by desk and tool (\"unknown\": a tool the desk does not have).",
                                MetricType::counter, {"desk", "tool"}, kDesksTimesTools)),
      model_requests_(registry_.add("deskd_model_requests_total", "Requests to a desk's model.", MetricType::counter,
                                    {"desk", "model"}, kDesksTimesModels)),
      model_input_tokens_(registry_.add("deskd_model_input_tokens_total",
                                        "Input tokens of a desk's model requests, cache reads and writes included.",
                                        MetricType::counter, {"desk", "model"}, kDesksTimesModels)),
      model_output_tokens_(registry_.add("deskd_model_output_tokens_total", "Output tokens of a desk's model requests.",
                                         MetricType::counter, {"desk", "model"}, kDesksTimesModels)),
      model_cost_(registry_.add("deskd_model_cost_usd_total",
                                "Estimated cost of a desk's model requests in US dollars (priced models only).",
                                MetricType::counter, {"desk", "model"}, kDesksTimesModels)),
      refusals_(registry_.add("deskd_refusals_total", "What a desk's enforcers refused.", MetricType::counter,
                              {"desk", "enforcer"}, kMaximumDesks * kEnforcers.size())),
      egress_requests_(registry_.add("deskd_egress_requests_total",
                                     "Requests through a desk's egress proxy, by outcome.", MetricType::counter,
                                     {"desk", "outcome"}, kMaximumDesks * kEgressOutcomes.size())),
      api_gate_requests_(registry_.add("deskd_api_gate_requests_total", "Calls through a desk's API gate, by outcome.",
                                       MetricType::counter, {"desk", "outcome"}, kMaximumDesks * kApiOutcomes.size())),
      sandbox_start_(registry_.add("deskd_sandbox_start_duration_seconds",
                                   "How long a sandbox took to start, clone to exec.", MetricType::histogram, {}, 1,
                                   kSandboxStartBounds)),
      journal_fsync_(registry_.add("deskd_journal_fsync_duration_seconds", "How long a journal's fsync took.",
                                   MetricType::histogram, {}, 1, kFsyncBounds)),
      control_clients_(
          registry_.add("deskd_control_clients", "Clients connected to the control socket.", MetricType::gauge)),
      web_clients_(registry_.add("deskd_web_clients", "Clients connected to the web server.", MetricType::gauge)),
      resident_memory_(
          registry_.add("deskd_process_resident_memory_bytes", "deskd's resident memory.", MetricType::gauge)),
      open_descriptors_(registry_.add("deskd_process_open_fds", "deskd's open file descriptors.", MetricType::gauge)),
      series_dropped_(registry_.add("deskd_metrics_series_dropped_total",
                                    "Observations not shown because their metric had reached its series cap.",
                                    MetricType::counter, {"metric"}, 64)) {
  // Series that always exist, so that a scrape shows them at zero.
  for (const auto state : kDeskStates) desks_by_state_.gauge({state});
  sandbox_start_.histogram({});
  journal_fsync_.histogram({});
  control_clients_.gauge({});
  web_clients_.gauge({});
}

void DeskdMetrics::know_desk(std::string_view desk) {
  {
    const std::unique_lock lock(desks_mutex_);
    if (desks_.contains(desk) || desks_.size() >= kMaximumDesks) return;
    desks_.emplace(std::string(desk), DeskLabels{});
  }
  // A desk's turns show at zero from its start, so that rate() sees its first turn.
  for (Family* family : {&turns_started_, &turns_finished_, &turns_failed_, &turns_stopped_}) family->counter({desk});
}

void DeskdMetrics::know_desk_tools(std::string_view desk, const std::vector<std::string>& tools) {
  const std::unique_lock lock(desks_mutex_);
  const auto found = desks_.find(desk);
  if (found == desks_.end()) return;
  for (const auto& tool : tools) {
    if (found->second.tools.size() >= kMaximumToolsPerDesk) break;
    found->second.tools.insert(tool);
  }
}

const DeskdMetrics::DeskLabels* DeskdMetrics::labels_of(std::string_view desk) const {
  const auto found = desks_.find(desk);
  return found != desks_.end() ? &found->second : nullptr;
}

std::string_view DeskdMetrics::tool_label(const DeskLabels& labels, std::string_view tool) const {
  const auto found = labels.tools.find(tool);
  return found != labels.tools.end() ? std::string_view(*found) : kUnknownTool;
}

void DeskdMetrics::observe(const desk::Event& event) {
  using namespace desk::event_kind;
  const std::shared_lock lock(desks_mutex_);
  const DeskLabels* labels = labels_of(event.desk);
  if (labels == nullptr) return;
  const std::string_view desk = event.desk;
  const std::string_view kind = event.kind;
  // A subagent's turn is part of its desk's turn, not one of the desk's turns; its tool
  // calls are the desk's.
  const bool subagent = event.data.contains("subagent");
  if (kind == kTurnStarted && !subagent) {
    add_to(turns_started_.counter({desk}));
  } else if (kind == kTurnFinished && !subagent) {
    // A paused desk answers without a turn.
    if (!flag(event, "paused")) add_to(turns_finished_.counter({desk}));
  } else if (kind == kTurnFailed && !subagent) {
    // A failed rollover precedes the turn, which still runs.
    if (!flag(event, "rollover")) add_to(turns_failed_.counter({desk}));
  } else if (kind == kTurnStopped && !subagent) {
    add_to(turns_stopped_.counter({desk}));
  } else if (kind == kToolCalled) {
    add_to(tool_calls_.counter({desk, tool_label(*labels, string_field(event, "tool"))}));
  } else if (kind == kRefused) {
    const auto* folded = event.data.if_contains("folded");
    double count = reported_count(event);
    if (folded != nullptr && folded->is_int64()) count = static_cast<double>(folded->get_int64());
    if (folded != nullptr && folded->is_uint64()) count = static_cast<double>(folded->get_uint64());
    add_to(refusals_.counter({desk, fixed_label(kEnforcers, string_field(event, "enforcer"))}), count);
  } else if (kind == kNetworkRefused) {
    add_to(egress_requests_.counter({desk, "refused"}), reported_count(event));
  } else if (kind == kApiCall) {
    add_to(api_gate_requests_.counter({desk, fixed_label(kApiOutcomes, string_field(event, "outcome"))}));
  } else if (kind == kApiRefused) {
    // A call the gate refused is told as API_REFUSED alone (rate-limited), never API_CALL.
    add_to(api_gate_requests_.counter({desk, "refused"}), reported_count(event));
  }
}

std::string_view DeskdMetrics::model_label(std::string_view desk, std::string_view model) {
  if (!model_name_is_plain(model)) return kOtherModel;
  {
    const std::shared_lock lock(desks_mutex_);
    const DeskLabels* labels = labels_of(desk);
    if (labels == nullptr) return {};
    for (const auto& known : labels->models) {
      if (known == model) return known;
    }
    if (labels->models.size() >= kMaximumModelsPerDesk) return kOtherModel;
  }
  const std::unique_lock lock(desks_mutex_);
  const auto found = desks_.find(desk);
  if (found == desks_.end()) return {};
  auto& models = found->second.models;
  for (const auto& known : models) {
    if (known == model) return known;
  }
  if (models.size() >= kMaximumModelsPerDesk) return kOtherModel;
  // Reserved up front: the names already handed out stay where they are.
  if (models.capacity() < kMaximumModelsPerDesk) models.reserve(kMaximumModelsPerDesk);
  return models.emplace_back(model);
}

void DeskdMetrics::observe_model_request(std::string_view desk, std::string_view model,
                                         const std::optional<ModelRequestTokens>& tokens,
                                         std::optional<double> cost_usd) {
  const std::string_view label = model_label(desk, model);
  if (label.empty()) return;
  add_to(model_requests_.counter({desk, label}));
  if (tokens) {
    add_to(model_input_tokens_.counter({desk, label}), static_cast<double>(tokens->input));
    add_to(model_output_tokens_.counter({desk, label}), static_cast<double>(tokens->output));
  }
  if (cost_usd) add_to(model_cost_.counter({desk, label}), *cost_usd);
}

void DeskdMetrics::observe_egress(std::string_view desk, std::string_view outcome) {
  const auto known = std::find(kEgressOutcomes.begin(), kEgressOutcomes.end(), outcome);
  if (known == kEgressOutcomes.end()) return;
  {
    const std::shared_lock lock(desks_mutex_);
    if (labels_of(desk) == nullptr) return;
  }
  add_to(egress_requests_.counter({desk, *known}));
}

void DeskdMetrics::observe_sandbox_start(std::chrono::nanoseconds took) {
  sandbox_start_.histogram({})->observe(std::chrono::duration<double>(took).count());
}

void DeskdMetrics::observe_journal_fsync(std::chrono::nanoseconds took) {
  journal_fsync_.histogram({})->observe(std::chrono::duration<double>(took).count());
}

void DeskdMetrics::set_control_clients(std::size_t connected) {
  control_clients_.gauge({})->set(static_cast<double>(connected));
}

void DeskdMetrics::set_web_clients(std::size_t connected) {
  web_clients_.gauge({})->set(static_cast<double>(connected));
}

std::string DeskdMetrics::render(std::span<const DeskSample> desks) {
  std::array<std::size_t, kDeskStates.size()> by_state{};
  for (const DeskSample& sample : desks) {
    const auto state = std::find(kDeskStates.begin(), kDeskStates.end(), sample.state);
    if (state != kDeskStates.end()) ++by_state[static_cast<std::size_t>(state - kDeskStates.begin())];
    bool known = false;
    {
      const std::shared_lock lock(desks_mutex_);
      known = labels_of(sample.name) != nullptr;
    }
    if (Gauge* queued = known ? desk_queue_.gauge({sample.name}) : nullptr) {
      queued->set(static_cast<double>(sample.queued));
    }
  }
  for (std::size_t index = 0; index < kDeskStates.size(); ++index) {
    desks_by_state_.gauge({kDeskStates[index]})->set(static_cast<double>(by_state[index]));
  }
  const ProcessSample process = sample_process();
  if (process.resident_bytes) resident_memory_.gauge({})->set(static_cast<double>(*process.resident_bytes));
  if (process.open_descriptors) open_descriptors_.gauge({})->set(static_cast<double>(*process.open_descriptors));
  for (const auto& family : registry_.families()) {
    if (family->dropped() == 0) continue;
    if (Counter* dropped = series_dropped_.counter({family->name()})) {
      dropped->add(static_cast<double>(family->dropped()) - dropped->value());
    }
  }
  return render_prometheus_text(registry_);
}

}  // namespace deskd::metrics
