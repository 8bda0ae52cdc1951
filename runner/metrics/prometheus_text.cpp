#include "runner/metrics/prometheus_text.h"

#include <charconv>
#include <cmath>

namespace deskd::metrics {

std::string escape_label_value(std::string_view value) {
  std::string escaped;
  escaped.reserve(value.size());
  for (const char character : value) {
    if (character == '\\') {
      escaped += "\\\\";
    } else if (character == '"') {
      escaped += "\\\"";
    } else if (character == '\n') {
      escaped += "\\n";
    } else {
      escaped += character;
    }
  }
  return escaped;
}

std::string escape_help(std::string_view text) {
  std::string escaped;
  escaped.reserve(text.size());
  for (const char character : text) {
    if (character == '\\') {
      escaped += "\\\\";
    } else if (character == '\n') {
      escaped += "\\n";
    } else {
      escaped += character;
    }
  }
  return escaped;
}

std::string sample_value(double value) {
  if (std::isnan(value)) return "NaN";
  if (std::isinf(value)) return value > 0 ? "+Inf" : "-Inf";
  char buffer[64];
  const auto written = std::to_chars(buffer, buffer + sizeof buffer, value);
  return std::string(buffer, written.ptr);
}

namespace {

// `name{a="x",b="y"}` with `extra` (le="...") last; no braces without labels.
void append_series_name(std::string& text, std::string_view name, const std::vector<std::string>& label_names,
                        std::span<const std::string> label_values, std::string_view extra_name = {},
                        std::string_view extra_value = {}) {
  text += name;
  if (label_names.empty() && extra_name.empty()) return;
  text += '{';
  bool first = true;
  const auto append_label = [&](std::string_view label, std::string_view value) {
    if (!first) text += ',';
    first = false;
    text += label;
    text += "=\"";
    text += escape_label_value(value);
    text += '"';
  };
  for (std::size_t index = 0; index < label_names.size() && index < label_values.size(); ++index) {
    append_label(label_names[index], label_values[index]);
  }
  if (!extra_name.empty()) append_label(extra_name, extra_value);
  text += '}';
}

void append_sample(std::string& text, double value) {
  text += ' ';
  text += sample_value(value);
  text += '\n';
}

void append_histogram(std::string& text, const Family& family, const SeriesView& series) {
  const Histogram& histogram = *series.histogram;
  const std::vector<std::uint64_t> counts = histogram.bucket_counts();
  const std::string bucket = family.name() + "_bucket";
  std::uint64_t cumulative = 0;
  for (std::size_t index = 0; index < histogram.upper_bounds().size(); ++index) {
    cumulative += counts[index];
    append_series_name(text, bucket, family.label_names(), series.label_values, "le",
                       sample_value(histogram.upper_bounds()[index]));
    append_sample(text, static_cast<double>(cumulative));
  }
  cumulative += counts.back();
  append_series_name(text, bucket, family.label_names(), series.label_values, "le", "+Inf");
  append_sample(text, static_cast<double>(cumulative));
  // The count matches the +Inf bucket even while an observation is half recorded: the
  // buckets and the count are separate atomics, and a scrape must not show them disagree.
  append_series_name(text, family.name() + "_sum", family.label_names(), series.label_values);
  append_sample(text, histogram.sum());
  append_series_name(text, family.name() + "_count", family.label_names(), series.label_values);
  append_sample(text, static_cast<double>(cumulative));
}

}  // namespace

std::string render_prometheus_text(const Registry& registry) {
  std::string text;
  for (const auto& family : registry.families()) {
    text += "# HELP " + family->name() + " " + escape_help(family->help()) + "\n";
    text += "# TYPE " + family->name() + " " + std::string(metric_type_name(family->type())) + "\n";
    family->for_each_series([&](const SeriesView& series) {
      if (series.histogram != nullptr) return append_histogram(text, *family, series);
      append_series_name(text, family->name(), family->label_names(), series.label_values);
      append_sample(text, series.counter != nullptr ? series.counter->value() : series.gauge->value());
    });
  }
  return text;
}

}  // namespace deskd::metrics
