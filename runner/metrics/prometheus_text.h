#pragma once
// The Prometheus text exposition format, version 0.0.4
// (https://prometheus.io/docs/instrumenting/exposition_formats/#text-based-format):
//   # HELP name text          (backslash and line feed escaped)
//   # TYPE name counter|gauge|histogram
//   name{label="value",...} 1.5
// with a histogram as name_bucket{...,le="0.1"} (cumulative), le="+Inf", name_sum and
// name_count. Label values are escaped (backslash, double quote, line feed), so no value can
// end its quotes or start a line of its own.

#include <string>
#include <string_view>

#include "runner/metrics/metric_registry.h"

namespace deskd::metrics {

/// The Content-Type a server gives the text.
inline constexpr std::string_view kPrometheusTextContentType = "text/plain; version=0.0.4; charset=utf-8";

/// `value` escaped for a label value between double quotes.
std::string escape_label_value(std::string_view value);
/// `text` escaped for a HELP line.
std::string escape_help(std::string_view text);
/// A sample value as the format writes it: the shortest text that reads back the same
/// number, "+Inf", "-Inf" or "NaN".
std::string sample_value(double value);

/// Every family of `registry`, each with its HELP and TYPE lines, in the registry's order.
std::string render_prometheus_text(const Registry& registry);

}  // namespace deskd::metrics
