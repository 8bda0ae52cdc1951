// The registry and the text format: exact text for small registries, escaping, the series
// cap, counts under threads, and Debian's promtool reading what is rendered.

#include <thread>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "runner/metrics/metric_registry.h"
#include "runner/metrics/prometheus_text.h"
#include "unit/metrics/promtool_check.h"

namespace deskd::metrics {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

void expect_promtool_accepts(const std::string& text) {
  const PromtoolVerdict verdict = promtool_check_metrics(text);
  if (!verdict.ran) GTEST_SKIP() << "promtool is missing: run scripts/setup test (package prometheus)";
  EXPECT_EQ(verdict.exit_status, 0) << verdict.output << "\n--- the text:\n" << text;
  EXPECT_EQ(verdict.output, "") << text;
}

TEST(PrometheusText, RendersCountersAndGaugesWithTheirHelpAndType) {
  Registry registry;
  Family& turns = registry.add("deskd_turns_finished_total", "Turns finished.", MetricType::counter, {"desk"}, 8);
  Family& clients = registry.add("deskd_control_clients", "Clients connected.", MetricType::gauge);
  turns.counter({"nifty"})->add();
  turns.counter({"nifty"})->add(2);
  turns.counter({"banknifty"})->add();
  clients.gauge({})->set(3);
  EXPECT_EQ(render_prometheus_text(registry),
            "# HELP deskd_turns_finished_total Turns finished.\n"
            "# TYPE deskd_turns_finished_total counter\n"
            "deskd_turns_finished_total{desk=\"banknifty\"} 1\n"
            "deskd_turns_finished_total{desk=\"nifty\"} 3\n"
            "# HELP deskd_control_clients Clients connected.\n"
            "# TYPE deskd_control_clients gauge\n"
            "deskd_control_clients 3\n");
  expect_promtool_accepts(render_prometheus_text(registry));
}

TEST(PrometheusText, RendersAHistogramCumulativelyWithSumAndCount) {
  Registry registry;
  Family& fsyncs =
      registry.add("deskd_journal_fsync_duration_seconds", "Fsyncs.", MetricType::histogram, {}, 1, {0.001, 0.01, 0.1});
  Histogram& histogram = *fsyncs.histogram({});
  histogram.observe(0.0005);
  histogram.observe(0.001);  // on a bound: counted in it (le means "less or equal")
  histogram.observe(0.05);
  histogram.observe(7);
  EXPECT_EQ(render_prometheus_text(registry),
            "# HELP deskd_journal_fsync_duration_seconds Fsyncs.\n"
            "# TYPE deskd_journal_fsync_duration_seconds histogram\n"
            "deskd_journal_fsync_duration_seconds_bucket{le=\"0.001\"} 2\n"
            "deskd_journal_fsync_duration_seconds_bucket{le=\"0.01\"} 2\n"
            "deskd_journal_fsync_duration_seconds_bucket{le=\"0.1\"} 3\n"
            "deskd_journal_fsync_duration_seconds_bucket{le=\"+Inf\"} 4\n"
            "deskd_journal_fsync_duration_seconds_sum 7.0515\n"
            "deskd_journal_fsync_duration_seconds_count 4\n");
  expect_promtool_accepts(render_prometheus_text(registry));
}

TEST(PrometheusText, EscapesLabelValuesAndHelpSoNoValueEndsItsQuotesOrItsLine) {
  EXPECT_EQ(escape_label_value("a\\b\"c\nd"), "a\\\\b\\\"c\\nd");
  EXPECT_EQ(escape_help("line\\one\nline two \"quoted\""), "line\\\\one\\nline two \"quoted\"");
  Registry registry;
  Family& family =
      registry.add("deskd_test_total", "Help with \\ and\na line break.", MetricType::counter, {"desk"}, 4);
  family.counter({"x\"} 1\ndeskd_forged_total 99\n\\"})->add();
  const std::string text = render_prometheus_text(registry);
  EXPECT_THAT(text, Not(HasSubstr("\ndeskd_forged_total")));
  EXPECT_THAT(text, HasSubstr("deskd_test_total{desk=\"x\\\"} 1\\ndeskd_forged_total 99\\n\\\\\"} 1\n"));
  expect_promtool_accepts(text);
}

TEST(PrometheusText, WritesValuesAsTheFormatReadsThem) {
  EXPECT_EQ(sample_value(0), "0");
  EXPECT_EQ(sample_value(42), "42");
  EXPECT_EQ(sample_value(0.1), "0.1");
  EXPECT_EQ(sample_value(1e21), "1e+21");
  EXPECT_EQ(sample_value(std::numeric_limits<double>::infinity()), "+Inf");
  EXPECT_EQ(sample_value(-std::numeric_limits<double>::infinity()), "-Inf");
  EXPECT_EQ(sample_value(std::numeric_limits<double>::quiet_NaN()), "NaN");
}

TEST(MetricRegistry, RefusesSeriesPastTheCapAndCountsWhatItDropped) {
  Registry registry;
  Family& family = registry.add("deskd_test_total", "Test.", MetricType::counter, {"desk"}, 2);
  ASSERT_NE(family.counter({"a"}), nullptr);
  ASSERT_NE(family.counter({"b"}), nullptr);
  EXPECT_EQ(family.counter({"c"}), nullptr);
  EXPECT_NE(family.counter({"a"}), nullptr);  // an existing series is still served
  EXPECT_EQ(family.counter({"a", "extra"}), nullptr);
  EXPECT_EQ(family.dropped(), 2u);
  EXPECT_THAT(render_prometheus_text(registry), Not(HasSubstr("\"c\"")));
}

TEST(MetricRegistry, CountsExactlyUnderManyThreads) {
  Registry registry;
  Family& family = registry.add("deskd_test_total", "Test.", MetricType::counter, {"desk"}, 8);
  Family& latencies = registry.add("deskd_test_seconds", "Test.", MetricType::histogram, {}, 1, {0.5, 1.5});
  constexpr int kThreads = 4;
  constexpr int kEach = 20000;
  std::vector<std::thread> threads;
  for (int thread = 0; thread < kThreads; ++thread) {
    threads.emplace_back([&, thread] {
      const std::string desk = thread % 2 == 0 ? "even" : "odd";
      for (int count = 0; count < kEach; ++count) {
        family.counter({desk})->add();
        latencies.histogram({})->observe(1);
      }
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(family.counter({"even"})->value(), 2.0 * kEach);
  EXPECT_EQ(family.counter({"odd"})->value(), 2.0 * kEach);
  EXPECT_EQ(latencies.histogram({})->count(), std::uint64_t{kThreads} * kEach);
  EXPECT_EQ(latencies.histogram({})->bucket_counts(), (std::vector<std::uint64_t>{0, kThreads * kEach, 0}));
}

TEST(MetricRegistry, ACounterNeverGoesDown) {
  Counter counter;
  counter.add(2);
  counter.add(-5);
  EXPECT_EQ(counter.value(), 2);
}

}  // namespace
}  // namespace deskd::metrics
