#include "runner/metrics/metric_registry.h"

#include <algorithm>
#include <cassert>
#include <mutex>

namespace deskd::metrics {

std::string_view metric_type_name(MetricType type) {
  switch (type) {
    case MetricType::counter: return "counter";
    case MetricType::gauge: return "gauge";
    case MetricType::histogram: return "histogram";
  }
  return "untyped";
}

Histogram::Histogram(std::span<const double> upper_bounds)
    : upper_bounds_(upper_bounds), buckets_(new std::atomic<std::uint64_t>[upper_bounds.size() + 1]) {
  for (std::size_t index = 0; index <= upper_bounds.size(); ++index) buckets_[index].store(0);
}

void Histogram::observe(double value) {
  // A handful of bounds: a linear walk is as quick as a search and branch-predictable.
  std::size_t index = 0;
  while (index < upper_bounds_.size() && value > upper_bounds_[index]) ++index;
  buckets_[index].fetch_add(1, std::memory_order_relaxed);
  sum_.fetch_add(value, std::memory_order_relaxed);
  count_.fetch_add(1, std::memory_order_relaxed);
}

std::vector<std::uint64_t> Histogram::bucket_counts() const {
  std::vector<std::uint64_t> counts(upper_bounds_.size() + 1);
  for (std::size_t index = 0; index < counts.size(); ++index) {
    counts[index] = buckets_[index].load(std::memory_order_relaxed);
  }
  return counts;
}

// One series holds the one metric its family's type asks for.
struct Family::Series {
  Series(std::vector<std::string> values, MetricType type, std::span<const double> upper_bounds)
      : label_values(std::move(values)) {
    if (type == MetricType::histogram) histogram = std::make_unique<Histogram>(upper_bounds);
  }
  std::vector<std::string> label_values;
  Counter counter;
  Gauge gauge;
  std::unique_ptr<Histogram> histogram;
};

namespace {

template <typename Left, typename Right>
bool labels_before(const Left& left, const Right& right) {
  return std::lexicographical_compare(left.begin(), left.end(), right.begin(), right.end(),
                                      [](std::string_view a, std::string_view b) { return a < b; });
}

}  // namespace

bool Family::LabelsLess::operator()(const std::vector<std::string>& left, const std::vector<std::string>& right) const {
  return labels_before(left, right);
}
bool Family::LabelsLess::operator()(const std::vector<std::string>& left,
                                    std::span<const std::string_view> right) const {
  return labels_before(left, right);
}
bool Family::LabelsLess::operator()(std::span<const std::string_view> left,
                                    const std::vector<std::string>& right) const {
  return labels_before(left, right);
}

Family::Family(std::string name, std::string help, MetricType type, std::vector<std::string> label_names,
               std::size_t maximum_series, std::vector<double> upper_bounds)
    : name_(std::move(name)),
      help_(std::move(help)),
      type_(type),
      label_names_(std::move(label_names)),
      maximum_series_(maximum_series),
      upper_bounds_(std::move(upper_bounds)) {
  assert(std::is_sorted(upper_bounds_.begin(), upper_bounds_.end()));
}

Family::~Family() = default;

Family::Series* Family::series(std::span<const std::string_view> label_values) {
  if (label_values.size() != label_names_.size()) {
    dropped_.fetch_add(1, std::memory_order_relaxed);
    return nullptr;
  }
  {
    const std::shared_lock lock(mutex_);
    if (const auto found = series_.find(label_values); found != series_.end()) return found->second.get();
  }
  const std::unique_lock lock(mutex_);
  if (const auto found = series_.find(label_values); found != series_.end()) return found->second.get();
  if (series_.size() >= maximum_series_) {
    dropped_.fetch_add(1, std::memory_order_relaxed);
    return nullptr;
  }
  std::vector<std::string> key(label_values.begin(), label_values.end());
  auto made = std::make_unique<Series>(key, type_, upper_bounds_);
  return series_.emplace(std::move(key), std::move(made)).first->second.get();
}

Counter* Family::counter(std::initializer_list<std::string_view> label_values) {
  assert(type_ == MetricType::counter);
  Series* found = series(std::span(label_values.begin(), label_values.size()));
  return found != nullptr ? &found->counter : nullptr;
}

Gauge* Family::gauge(std::initializer_list<std::string_view> label_values) {
  assert(type_ == MetricType::gauge);
  Series* found = series(std::span(label_values.begin(), label_values.size()));
  return found != nullptr ? &found->gauge : nullptr;
}

Histogram* Family::histogram(std::initializer_list<std::string_view> label_values) {
  assert(type_ == MetricType::histogram);
  Series* found = series(std::span(label_values.begin(), label_values.size()));
  return found != nullptr ? found->histogram.get() : nullptr;
}

void Family::for_each_series(const std::function<void(const SeriesView&)>& visit) const {
  const std::shared_lock lock(mutex_);
  for (const auto& [labels, series] : series_) {
    SeriesView view{labels};
    if (type_ == MetricType::counter) view.counter = &series->counter;
    if (type_ == MetricType::gauge) view.gauge = &series->gauge;
    if (type_ == MetricType::histogram) view.histogram = series->histogram.get();
    visit(view);
  }
}

Family& Registry::add(std::string name, std::string help, MetricType type, std::vector<std::string> label_names,
                      std::size_t maximum_series, std::vector<double> upper_bounds) {
  families_.push_back(std::make_unique<Family>(std::move(name), std::move(help), type, std::move(label_names),
                                               maximum_series, std::move(upper_bounds)));
  return *families_.back();
}

}  // namespace deskd::metrics
