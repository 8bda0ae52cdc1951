// The daemon's metrics: what its desks' parts measure reaches metrics_ through hooks made
// here, and metrics_text() adds what is read at scrape time.

#include "runner/daemon/daemon.h"
#include "runner/daemon/daemon_slot.h"
#include "runner/daemon/desk_assembly.h"
#include "runner/web/web_server.h"

namespace deskd::app {

DeskMeasures Daemon::desk_measures(const std::string& desk) {
  // metrics_ outlives every desk (it is declared before the slots), so the hooks may hold it.
  metrics::DeskdMetrics& metrics = metrics_;
  return DeskMeasures{
      .sandbox_started = [&metrics](std::chrono::nanoseconds took) { metrics.observe_sandbox_start(took); },
      .journal_fsynced = [&metrics](std::chrono::nanoseconds took) { metrics.observe_journal_fsync(took); },
      .model_requests =
          [&metrics, desk_name = desk](std::string_view model, const std::optional<desk::Usage>& usage,
                                       std::optional<double> cost_usd) {
            std::optional<metrics::ModelRequestTokens> tokens;
            if (usage) {
              tokens = metrics::ModelRequestTokens{
                  usage->input_tokens + usage->cache_read_tokens + usage->cache_write_tokens, usage->output_tokens};
            }
            metrics.observe_model_request(desk_name, model, tokens, cost_usd);
          },
      .egress_outcomes =
          [&metrics, desk_name = desk](egress::EgressOutcome outcome) {
            metrics.observe_egress(desk_name, outcome == egress::EgressOutcome::allowed ? "allowed" : "failed");
          },
  };
}

std::string Daemon::metrics_text() {
  std::vector<metrics::DeskSample> samples;
  for (const control::DeskSummary& summary : desks()) {
    metrics::DeskSample sample{summary.name, summary.state, 0};
    if (summary.error) sample.state = "failed";
    if (summary.running) {
      sample.queued = summary.running->queued;
      if (summary.running->paused && summary.state == "idle") sample.state = "paused";
    }
    samples.push_back(std::move(sample));
  }
  if (control_clients_) metrics_.set_control_clients(control_clients_());
  if (web_server_ != nullptr) metrics_.set_web_clients(web_server_->connection_count());
  return metrics_.render(samples);
}

}  // namespace deskd::app
