#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/synchronization/mutex.h"

namespace holdfast {

using MetricLabels = std::vector<std::pair<std::string, std::string>>;

class Counter {
 public:
  void Increment(uint64_t n = 1) { value_.fetch_add(n, std::memory_order_relaxed); }
  uint64_t value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<uint64_t> value_{0};
};

class Gauge {
 public:
  void Set(double v) { value_.store(v, std::memory_order_relaxed); }
  void Add(double d);
  double value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<double> value_{0};
};

// Observations counted into fixed buckets (Prometheus histogram: each
// bucket counts observations <= its bound, rendered cumulatively).
class Histogram {
 public:
  explicit Histogram(std::vector<double> bounds);
  void Observe(double value);
  const std::vector<double>& bounds() const { return bounds_; }
  // Count per bucket (not cumulative), the last for values past every bound.
  std::vector<uint64_t> Counts() const;
  double sum() const { return sum_.value(); }

 private:
  const std::vector<double> bounds_;
  std::unique_ptr<std::atomic<uint64_t>[]> counts_;
  Gauge sum_;
};

// Receives samples from a collector while /metrics is rendered.
class MetricWriter {
 public:
  virtual ~MetricWriter() = default;
  // `type` is "gauge" or "counter".
  virtual void Sample(const std::string& name, const std::string& help, const std::string& type,
                      const MetricLabels& labels, double value) = 0;
};

// Named metrics of the process, rendered in the Prometheus text format.
// Counters and gauges live as long as the registry; the pointers returned are
// stable and safe to use from any thread. Collectors compute samples on
// demand (for values that live elsewhere, like per-group snapshot versions).
class MetricsRegistry {
 public:
  Counter* GetCounter(const std::string& name, const std::string& help,
                      const MetricLabels& labels = {});
  Gauge* GetGauge(const std::string& name, const std::string& help,
                  const MetricLabels& labels = {});
  // `bounds` ascending; the first call for a name fixes them.
  Histogram* GetHistogram(const std::string& name, const std::string& help,
                          const MetricLabels& labels, const std::vector<double>& bounds);
  // Returns an id for RemoveCollector.
  int AddCollector(std::function<void(MetricWriter&)> collector);
  void RemoveCollector(int id);
  std::string RenderPrometheus() const;

 private:
  struct Family {
    std::string help;
    std::string type;
    std::map<MetricLabels, std::unique_ptr<Counter>> counters;
    std::map<MetricLabels, std::unique_ptr<Gauge>> gauges;
    std::map<MetricLabels, std::unique_ptr<Histogram>> histograms;
  };
  mutable absl::Mutex mu_;
  std::map<std::string, Family> families_ ABSL_GUARDED_BY(mu_);
  std::map<int, std::function<void(MetricWriter&)>> collectors_ ABSL_GUARDED_BY(mu_);
  int next_collector_ ABSL_GUARDED_BY(mu_) = 1;
};

}  // namespace holdfast
