// deskd's metrics fed as the daemon feeds them: events through a real EventBus sink, model
// requests and latencies through the hooks; bounded labels; the text read by promtool.

#include <boost/json.hpp>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "base/clock.h"
#include "runner/events/event_bus.h"
#include "runner/metrics/deskd_metrics.h"
#include "unit/metrics/promtool_check.h"

namespace deskd::metrics {
namespace {

using namespace std::chrono_literals;
using ::testing::HasSubstr;
using ::testing::MatchesRegex;
using ::testing::Not;
namespace kind = desk::event_kind;

class DeskdMetricsTest : public ::testing::Test {
 protected:
  DeskdMetricsTest() : bus_(clock_) {
    bus_.add_sink([this](const desk::Event& event) { metrics_.observe(event); });
    metrics_.know_desk("nifty");
    metrics_.know_desk_tools("nifty", {"bash", "read_file"});
  }

  std::string rendered() {
    const std::vector<DeskSample> desks = {{"nifty", "running", 2}, {"gone", "failed", 0}};
    return metrics_.render(desks);
  }

  SystemClock clock_;
  DeskdMetrics metrics_;
  desk::EventBus bus_;
};

TEST_F(DeskdMetricsTest, CountsTurnsOfAKnownDeskFromItsEvents) {
  bus_.publish("nifty", kind::kTurnStarted, {{"trigger", "t-1"}});
  bus_.publish("nifty", kind::kTurnFinished, {{"trigger", "t-1"}, {"reply", "done"}});
  bus_.publish("nifty", kind::kTurnStarted, {{"trigger", "t-2"}});
  bus_.publish("nifty", kind::kTurnFailed, {{"trigger", "t-2"}, {"error", "no"}});
  bus_.publish("nifty", kind::kTurnStarted, {{"trigger", "t-3"}});
  bus_.publish("nifty", kind::kTurnStopped, {{"trigger", "t-3"}, {"reason", "/stop"}});
  // Not turns: a paused desk's answer, a failed rollover, a subagent's turn.
  bus_.publish("nifty", kind::kTurnFinished, {{"trigger", "t-4"}, {"paused", true}});
  bus_.publish("nifty", kind::kTurnFailed, {{"trigger", "t-5"}, {"rollover", true}});
  bus_.publish("nifty", kind::kTurnStarted, {{"subagent", "sa-1"}});
  // A desk the daemon never named is no label value.
  bus_.publish("stranger", kind::kTurnStarted, {{"trigger", "t-6"}});
  const std::string text = rendered();
  EXPECT_THAT(text, HasSubstr("deskd_turns_started_total{desk=\"nifty\"} 3\n"));
  EXPECT_THAT(text, HasSubstr("deskd_turns_finished_total{desk=\"nifty\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("deskd_turns_failed_total{desk=\"nifty\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("deskd_turns_stopped_total{desk=\"nifty\"} 1\n"));
  EXPECT_THAT(text, Not(HasSubstr("stranger")));
  EXPECT_THAT(text, Not(HasSubstr("gone")));  // in the sample, but never named
  EXPECT_THAT(text, HasSubstr("deskd_desks{state=\"running\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("deskd_desks{state=\"failed\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("deskd_desks{state=\"idle\"} 0\n"));
  EXPECT_THAT(text, HasSubstr("deskd_desk_queued_triggers{desk=\"nifty\"} 2\n"));
}

TEST_F(DeskdMetricsTest, LabelsToolsOnlyWithTheDesksOwnToolNames) {
  bus_.publish("nifty", kind::kToolCalled, {{"tool", "bash"}, {"id", "c1"}});
  bus_.publish("nifty", kind::kToolCalled, {{"tool", "bash"}, {"id", "c2"}});
  // The model names the tool: anything else it makes up is "unknown", never a label.
  bus_.publish("nifty", kind::kToolCalled, {{"tool", "evil\"} 1\nforged 2"}, {"id", "c3"}});
  for (int call = 0; call < 200; ++call) {
    bus_.publish("nifty", kind::kToolCalled, {{"tool", "made_up_" + std::to_string(call)}});
  }
  const std::string text = rendered();
  EXPECT_THAT(text, HasSubstr("deskd_tool_calls_total{desk=\"nifty\",tool=\"bash\"} 2\n"));
  EXPECT_THAT(text, HasSubstr("deskd_tool_calls_total{desk=\"nifty\",tool=\"unknown\"} 201\n"));
  EXPECT_THAT(text, Not(HasSubstr("evil")));
  EXPECT_THAT(text, Not(HasSubstr("made_up")));
}

TEST_F(DeskdMetricsTest, CountsRefusalsEgressAndGateOutcomesByFixedWords) {
  bus_.publish("nifty", kind::kRefused, {{"enforcer", "seccomp"}, {"what", "mount(2)"}});
  bus_.publish("nifty", kind::kRefused, {{"enforcer", "seccomp"}, {"what", "mount(2)"}, {"folded", 4}});
  bus_.publish("nifty", kind::kRefused, {{"enforcer", "path_policy"}, {"dropped_before", 2}});
  bus_.publish("nifty", kind::kRefused, {{"enforcer", "whatever the desk wrote"}});
  bus_.publish("nifty", kind::kNetworkRefused, {{"host", "evil.example"}, {"port", 443}, {"unreported_before", 9}});
  bus_.publish("nifty", kind::kApiCall, {{"api", "kite"}, {"outcome", "allowed"}, {"status", 200}});
  bus_.publish("nifty", kind::kApiCall, {{"api", "kite"}, {"outcome", "denied"}, {"status", 403}});
  bus_.publish("nifty", kind::kApiCall, {{"api", "kite"}, {"outcome", "\"made up\""}});
  bus_.publish("nifty", kind::kApiRefused, {{"api", "kite"}, {"why", "no rule"}, {"unreported_before", 1}});
  const std::string text = rendered();
  EXPECT_THAT(text, HasSubstr("deskd_refusals_total{desk=\"nifty\",enforcer=\"seccomp\"} 5\n"));
  EXPECT_THAT(text, HasSubstr("deskd_refusals_total{desk=\"nifty\",enforcer=\"path_policy\"} 3\n"));
  EXPECT_THAT(text, HasSubstr("deskd_refusals_total{desk=\"nifty\",enforcer=\"other\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("deskd_egress_requests_total{desk=\"nifty\",outcome=\"refused\"} 10\n"));
  EXPECT_THAT(text, HasSubstr("deskd_api_gate_requests_total{desk=\"nifty\",outcome=\"allowed\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("deskd_api_gate_requests_total{desk=\"nifty\",outcome=\"denied\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("deskd_api_gate_requests_total{desk=\"nifty\",outcome=\"other\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("deskd_api_gate_requests_total{desk=\"nifty\",outcome=\"refused\"} 2\n"));
  EXPECT_THAT(text, Not(HasSubstr("made up")));
}

TEST_F(DeskdMetricsTest, CountsModelRequestsTokensAndCostWithBoundedModelNames) {
  metrics_.observe_model_request("nifty", "claude-sonnet-4-5", ModelRequestTokens{1000, 200}, 0.25);
  metrics_.observe_model_request("nifty", "claude-sonnet-4-5", std::nullopt, std::nullopt);
  metrics_.observe_model_request("nifty", "odd name\"}", ModelRequestTokens{1, 1}, std::nullopt);
  for (int model = 0; model < 20; ++model) {
    metrics_.observe_model_request("nifty", "model-" + std::to_string(model), std::nullopt, std::nullopt);
  }
  metrics_.observe_model_request("stranger", "claude-sonnet-4-5", ModelRequestTokens{1, 1}, 1.0);
  const std::string text = rendered();
  EXPECT_THAT(text, HasSubstr("deskd_model_requests_total{desk=\"nifty\",model=\"claude-sonnet-4-5\"} 2\n"));
  EXPECT_THAT(text, HasSubstr("deskd_model_input_tokens_total{desk=\"nifty\",model=\"claude-sonnet-4-5\"} 1000\n"));
  EXPECT_THAT(text, HasSubstr("deskd_model_output_tokens_total{desk=\"nifty\",model=\"claude-sonnet-4-5\"} 200\n"));
  EXPECT_THAT(text, HasSubstr("deskd_model_cost_usd_total{desk=\"nifty\",model=\"claude-sonnet-4-5\"} 0.25\n"));
  // One odd name and 20 more models: seven get their own series, the rest are "other".
  EXPECT_THAT(text, HasSubstr("deskd_model_requests_total{desk=\"nifty\",model=\"other\"} 14\n"));
  EXPECT_THAT(text, HasSubstr("model=\"model-6\""));
  EXPECT_THAT(text, Not(HasSubstr("model=\"model-7\"")));
  EXPECT_THAT(text, Not(HasSubstr("stranger")));
}

TEST_F(DeskdMetricsTest, ShowsLatenciesClientsAndTheProcess) {
  metrics_.observe_egress("nifty", "allowed");
  metrics_.observe_egress("nifty", "allowed");
  metrics_.observe_egress("nifty", "failed");
  metrics_.observe_egress("nifty", "made up");
  metrics_.observe_egress("stranger", "allowed");
  metrics_.observe_sandbox_start(30ms);
  metrics_.observe_journal_fsync(200us);
  metrics_.set_control_clients(2);
  metrics_.set_web_clients(1);
  const std::string text = rendered();
  EXPECT_THAT(text, HasSubstr("deskd_sandbox_start_duration_seconds_bucket{le=\"0.05\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("deskd_sandbox_start_duration_seconds_bucket{le=\"0.025\"} 0\n"));
  EXPECT_THAT(text, HasSubstr("deskd_journal_fsync_duration_seconds_count 1\n"));
  EXPECT_THAT(text, HasSubstr("deskd_control_clients 2\n"));
  EXPECT_THAT(text, HasSubstr("deskd_egress_requests_total{desk=\"nifty\",outcome=\"allowed\"} 2\n"));
  EXPECT_THAT(text, HasSubstr("deskd_egress_requests_total{desk=\"nifty\",outcome=\"failed\"} 1\n"));
  EXPECT_THAT(text, Not(HasSubstr("made up")));
  EXPECT_THAT(text, Not(HasSubstr("stranger")));
  EXPECT_THAT(text, HasSubstr("deskd_web_clients 1\n"));
  EXPECT_THAT(text, MatchesRegex("(.|\n)*\ndeskd_process_resident_memory_bytes [1-9][0-9]{5,}\n(.|\n)*"));
  EXPECT_THAT(text, MatchesRegex("(.|\n)*\ndeskd_process_open_fds [1-9][0-9]*\n(.|\n)*"));
}

TEST_F(DeskdMetricsTest, RendersTextThatPromtoolAccepts) {
  bus_.publish("nifty", kind::kTurnStarted, {{"trigger", "t-1"}});
  bus_.publish("nifty", kind::kToolCalled, {{"tool", "read_file"}});
  bus_.publish("nifty", kind::kRefused, {{"enforcer", "landlock"}});
  metrics_.observe_model_request("nifty", "gpt-4.1", ModelRequestTokens{5, 6}, 0.001);
  metrics_.observe_sandbox_start(12ms);
  metrics_.know_desk("with \"quotes\" and \\ slashes");
  bus_.publish("with \"quotes\" and \\ slashes", kind::kTurnStarted, {});
  const std::string text = rendered();
  const PromtoolVerdict verdict = promtool_check_metrics(text);
  if (!verdict.ran) GTEST_SKIP() << "promtool is missing: run scripts/setup test (package prometheus)";
  EXPECT_EQ(verdict.exit_status, 0) << verdict.output << "\n--- the text:\n" << text;
  EXPECT_EQ(verdict.output, "") << text;
}

}  // namespace
}  // namespace deskd::metrics
