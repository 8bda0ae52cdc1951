#pragma once
// A small registry of metrics in Prometheus' data model: families (a name, a help line, a
// type, label names) of series (one set of label values each). An observation is atomics
// only: no lock, no allocation. A series is made once, on its first use, under the family's
// lock; a family holds at most `maximum_series` of them, so whoever chooses label values
// cannot grow deskd: past the cap, observations are counted as dropped and not shown.
//
// Label values must come from a bounded set (desk names, fixed enums); the owner of the
// registry (deskd_metrics.h) chooses them, never the desk.

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <map>
#include <memory>
#include <shared_mutex>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace deskd::metrics {

enum class MetricType { counter, gauge, histogram };

/// "counter", "gauge", "histogram": the TYPE line's word.
std::string_view metric_type_name(MetricType type);

/// A value that only goes up (a count, or dollars).
class Counter {
 public:
  void add(double amount = 1) {
    if (amount > 0) value_.fetch_add(amount, std::memory_order_relaxed);
  }
  double value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<double> value_{0};
};

/// A value that goes up and down.
class Gauge {
 public:
  void set(double value) { value_.store(value, std::memory_order_relaxed); }
  void add(double amount) { value_.fetch_add(amount, std::memory_order_relaxed); }
  double value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<double> value_{0};
};

/// Observations counted into fixed buckets (upper bounds, ascending; +Inf is implied).
class Histogram {
 public:
  explicit Histogram(std::span<const double> upper_bounds);
  void observe(double value);

  std::span<const double> upper_bounds() const { return upper_bounds_; }
  /// How many observations fell at or under each bound (not cumulative), then past the last.
  std::vector<std::uint64_t> bucket_counts() const;
  double sum() const { return sum_.load(std::memory_order_relaxed); }
  std::uint64_t count() const { return count_.load(std::memory_order_relaxed); }

 private:
  std::span<const double> upper_bounds_;
  std::unique_ptr<std::atomic<std::uint64_t>[]> buckets_;  // one more than the bounds
  std::atomic<double> sum_{0};
  std::atomic<std::uint64_t> count_{0};
};

/// What a family holds about one series, for the renderer.
struct SeriesView {
  std::span<const std::string> label_values;
  const Counter* counter = nullptr;
  const Gauge* gauge = nullptr;
  const Histogram* histogram = nullptr;
};

/// A family's name, help, type and label names, and its series.
class Family {
 public:
  Family(std::string name, std::string help, MetricType type, std::vector<std::string> label_names,
         std::size_t maximum_series, std::vector<double> upper_bounds = {});
  ~Family();

  const std::string& name() const { return name_; }
  const std::string& help() const { return help_; }
  MetricType type() const { return type_; }
  const std::vector<std::string>& label_names() const { return label_names_; }
  /// Observations whose series was past the cap (or whose label count was wrong).
  std::uint64_t dropped() const { return dropped_.load(std::memory_order_relaxed); }

  /// The series with these label values (as many as label_names()), made on first use;
  /// nullptr past maximum_series or with the wrong number of values (counted as dropped).
  Counter* counter(std::initializer_list<std::string_view> label_values);
  Gauge* gauge(std::initializer_list<std::string_view> label_values);
  Histogram* histogram(std::initializer_list<std::string_view> label_values);

  /// Calls `visit` with every series, in label order, under the family's shared lock.
  void for_each_series(const std::function<void(const SeriesView&)>& visit) const;

 private:
  struct Series;
  struct LabelsLess {
    using is_transparent = void;
    bool operator()(const std::vector<std::string>& left, const std::vector<std::string>& right) const;
    bool operator()(const std::vector<std::string>& left, std::span<const std::string_view> right) const;
    bool operator()(std::span<const std::string_view> left, const std::vector<std::string>& right) const;
  };
  Series* series(std::span<const std::string_view> label_values);

  const std::string name_;
  const std::string help_;
  const MetricType type_;
  const std::vector<std::string> label_names_;
  const std::size_t maximum_series_;
  const std::vector<double> upper_bounds_;
  mutable std::shared_mutex mutex_;
  std::map<std::vector<std::string>, std::unique_ptr<Series>, LabelsLess> series_;
  std::atomic<std::uint64_t> dropped_{0};
};

/// The families, in the order they were added (the order they are rendered). Families are
/// added while the owner is built, before any other thread sees the registry.
class Registry {
 public:
  Family& add(std::string name, std::string help, MetricType type, std::vector<std::string> label_names = {},
              std::size_t maximum_series = 1, std::vector<double> upper_bounds = {});
  const std::vector<std::unique_ptr<Family>>& families() const { return families_; }

 private:
  std::vector<std::unique_ptr<Family>> families_;
};

}  // namespace deskd::metrics
