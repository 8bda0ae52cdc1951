#pragma once
// deskd's metrics: what `/metrics` shows (Prometheus text, prometheus_text.h). Most are fed
// from the daemon's event bus (observe(), a sink: turns, tool calls, refusals, egress and
// API gate outcomes), so that no enforcer depends on this library; the rest through hooks
// the daemon hands to where things are measured (model requests from each desk's usage
// tracker, sandbox starts, journal fsyncs, clients), and at render time (desks' states and
// queues, deskd's memory and descriptors).
//
// Bounded: a label value is a desk the daemon named (know_desk), a tool the desk has, a
// model name of a safe shape (at most kMaximumModelsPerDesk a desk, then "other"), or a
// word of a fixed list. Whatever else an event carries is never a label, so a desk cannot
// grow the series. A desk removed by a reload keeps its series until deskd restarts.
// Thread-safe: observations are atomics once a series exists.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <shared_mutex>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "runner/events/event.h"
#include "runner/metrics/metric_registry.h"

namespace deskd::metrics {

/// Desks whose names become label values; past it, a new desk's events are not counted.
inline constexpr std::size_t kMaximumDesks = 4096;
/// Tools of one desk counted by name; past it, and for a name the desk does not have, "unknown".
inline constexpr std::size_t kMaximumToolsPerDesk = 64;
/// Model names of one desk counted by name; past it, and for an odd name, "other".
inline constexpr std::size_t kMaximumModelsPerDesk = 8;

/// One model request's tokens, as the provider reported them.
struct ModelRequestTokens {
  std::uint64_t input = 0;  ///< all input: uncached, cache reads and cache writes
  std::uint64_t output = 0;
};

/// A desk as it is when the metrics are rendered.
struct DeskSample {
  std::string name;
  std::string state;  ///< starting, idle, running, paused, stopped, failed
  std::size_t queued = 0;
};

class DeskdMetrics {
 public:
  DeskdMetrics();
  DeskdMetrics(const DeskdMetrics&) = delete;
  DeskdMetrics& operator=(const DeskdMetrics&) = delete;

  /// Takes `desk` (a desk of the config) as a label value from now on.
  void know_desk(std::string_view desk);
  /// The tools `desk` has: their names are label values; any other name is "unknown".
  void know_desk_tools(std::string_view desk, const std::vector<std::string>& tools);

  /// Counts what `event` says (the bus's sink): TURN_*, TOOL_CALLED, REFUSED,
  /// NETWORK_REFUSED, API_CALL (by its outcome), API_REFUSED (outcome "refused"). Events of
  /// desks not known are left out.
  void observe(const desk::Event& event);
  /// One model request of `desk` (its usage tracker's observer); `tokens` none when the
  /// server reported no counts, `cost_usd` none when the price is unknown.
  void observe_model_request(std::string_view desk, std::string_view model,
                             const std::optional<ModelRequestTokens>& tokens, std::optional<double> cost_usd);
  /// A request of `desk`'s egress proxy that was not refused: `outcome` "allowed" (connected)
  /// or "failed" (no address, or none answered). Refusals come as NETWORK_REFUSED events.
  void observe_egress(std::string_view desk, std::string_view outcome);
  /// How long a sandbox took to start, clone to exec.
  void observe_sandbox_start(std::chrono::nanoseconds took);
  /// How long one fsync of a journal took.
  void observe_journal_fsync(std::chrono::nanoseconds took);
  /// How many control-socket and web clients are connected now.
  void set_control_clients(std::size_t connected);
  void set_web_clients(std::size_t connected);

  /// The text of every metric, with `desks` as they are now and deskd's process read now.
  std::string render(std::span<const DeskSample> desks);

  const Registry& registry() const { return registry_; }

 private:
  struct DeskLabels {
    std::set<std::string, std::less<>> tools;
    std::vector<std::string> models;
  };
  // Under desks_mutex_ (shared): the desk's label set, or nullptr for a desk not known.
  const DeskLabels* labels_of(std::string_view desk) const;
  std::string_view tool_label(const DeskLabels& labels, std::string_view tool) const;
  std::string_view model_label(std::string_view desk, std::string_view model);

  Registry registry_;
  Family& desks_by_state_;
  Family& desk_queue_;
  Family& turns_started_;
  Family& turns_finished_;
  Family& turns_failed_;
  Family& turns_stopped_;
  Family& tool_calls_;
  Family& model_requests_;
  Family& model_input_tokens_;
  Family& model_output_tokens_;
  Family& model_cost_;
  Family& refusals_;
  Family& egress_requests_;
  Family& api_gate_requests_;
  Family& sandbox_start_;
  Family& journal_fsync_;
  Family& control_clients_;
  Family& web_clients_;
  Family& resident_memory_;
  Family& open_descriptors_;
  Family& series_dropped_;
  mutable std::shared_mutex desks_mutex_;
  std::map<std::string, DeskLabels, std::less<>> desks_;
};

}  // namespace deskd::metrics
