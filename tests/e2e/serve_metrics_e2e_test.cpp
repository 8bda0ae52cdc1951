// deskd's metrics on a real `deskd serve` (issue 32's /metrics): a script-model turn with a
// bash call, then `deskctl metrics` (the control op the web server's /metrics shares the
// text with) shows the turn, the tool call, the model's requests, the sandbox starts, the
// journal's fsyncs, the control client and deskd's memory; Debian's promtool reads the text.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "e2e/daemon_fixture.h"
#include "e2e/serve_test_support.h"
#include "e2e/turn_tools.h"
#include "unit/metrics/promtool_check.h"

namespace deskd::e2e {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

class ServeMetricsE2eTest : public ServeE2eTest {};

TEST_F(ServeMetricsE2eTest, ATurnOnAScriptDeskShowsInTheMetrics) {
  ServeDaemon daemon({{"nifty", scripted_turn({bash_call("echo measured")})}, {"quiet", ""}});
  start(daemon);
  const DeskctlResult asked = daemon.deskctl({"ask", "nifty", "measure yourself"});
  ASSERT_EQ(asked.exit_code, 0) << describe(asked);

  const DeskctlResult metrics = daemon.deskctl({"metrics"});
  ASSERT_EQ(metrics.exit_code, 0) << describe(metrics);
  const std::string& text = metrics.output;
  EXPECT_EQ(sample_of(text, "deskd_turns_started_total{desk=\"nifty\"}"), 1) << text;
  EXPECT_EQ(sample_of(text, "deskd_turns_finished_total{desk=\"nifty\"}"), 1) << text;
  EXPECT_EQ(sample_of(text, "deskd_turns_failed_total{desk=\"nifty\"}"), 0) << text;
  EXPECT_EQ(sample_of(text, "deskd_turns_started_total{desk=\"quiet\"}"), 0) << text;
  EXPECT_EQ(sample_of(text, "deskd_tool_calls_total{desk=\"nifty\",tool=\"bash\"}"), 1) << text;
  // Two requests: the one that asked for the tool, and the one after its result.
  EXPECT_EQ(sample_of(text, "deskd_model_requests_total{desk=\"nifty\",model=\"script\"}"), 2) << text;
  EXPECT_GT(sample_of(text, "deskd_model_input_tokens_total{desk=\"nifty\",model=\"script\"}"), 0) << text;
  EXPECT_EQ(sample_of(text, "deskd_desks{state=\"idle\"}"), 2) << text;
  EXPECT_EQ(sample_of(text, "deskd_desk_queued_triggers{desk=\"nifty\"}"), 0) << text;
  // Each desk's trial sandbox, its bash and file opener: at least the trials and the bash.
  EXPECT_GE(sample_of(text, "deskd_sandbox_start_duration_seconds_count"), 3) << text;
  // The trigger's TRIGGER_ACCEPTED line is flushed before it is acknowledged.
  EXPECT_GE(sample_of(text, "deskd_journal_fsync_duration_seconds_count"), 1) << text;
  // deskctl's own connection is the one the scrape counts.
  EXPECT_GE(sample_of(text, "deskd_control_clients"), 1) << text;
  EXPECT_GT(sample_of(text, "deskd_process_resident_memory_bytes"), 1 << 20) << text;
  EXPECT_GT(sample_of(text, "deskd_process_open_fds"), 3) << text;

  const metrics::PromtoolVerdict verdict = metrics::promtool_check_metrics(text);
  if (!verdict.ran) GTEST_SKIP() << "promtool is missing: run scripts/setup test (package prometheus)";
  EXPECT_EQ(verdict.exit_status, 0) << verdict.output << "\n" << text;
  EXPECT_EQ(verdict.output, "") << text;
}

TEST_F(ServeMetricsE2eTest, ToolNamesAModelMakesUpAreNoLabels) {
  ServeDaemon daemon({{"nifty", scripted_turn({{"no_such_tool\"} 9\nforged", {}}, bash_call("true")})}});
  start(daemon);
  (void)daemon.deskctl({"ask", "nifty", "call what does not exist"});
  const DeskctlResult metrics = daemon.deskctl({"--json", "metrics"});
  ASSERT_EQ(metrics.exit_code, 0) << describe(metrics);
  const std::string text = field(parsed(metrics.output), "metrics");
  EXPECT_EQ(sample_of(text, "deskd_tool_calls_total{desk=\"nifty\",tool=\"unknown\"}"), 1) << text;
  EXPECT_EQ(sample_of(text, "deskd_tool_calls_total{desk=\"nifty\",tool=\"bash\"}"), 1) << text;
  EXPECT_THAT(text, Not(HasSubstr("no_such_tool")));
  EXPECT_THAT(text, Not(HasSubstr("forged")));
}

}  // namespace
}  // namespace deskd::e2e
