#include "src/common/metrics.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"

namespace holdfast {
namespace {

std::string FormatLabels(const MetricLabels& labels) {
  if (labels.empty()) return "";
  std::vector<std::string> parts;
  for (const auto& [key, value] : labels) {
    std::string escaped =
        absl::StrReplaceAll(value, {{"\\", "\\\\"}, {"\"", "\\\""}, {"\n", "\\n"}});
    parts.push_back(absl::StrCat(key, "=\"", escaped, "\""));
  }
  return absl::StrCat("{", absl::StrJoin(parts, ","), "}");
}

std::string FormatValue(double v) { return absl::StrFormat("%.17g", v); }

// Groups samples by family so HELP and TYPE are written once per name.
class TextWriter : public MetricWriter {
 public:
  void Sample(const std::string& name, const std::string& help, const std::string& type,
              const MetricLabels& labels, double value) override {
    Entry& entry = families_[name];
    entry.help = help;
    entry.type = type;
    absl::StrAppend(&entry.lines, name, FormatLabels(labels), " ", FormatValue(value), "\n");
  }
  // The series of one histogram: _bucket (cumulative, with le), _sum, _count.
  void Histogram(const std::string& name, const std::string& help, const MetricLabels& labels,
                 const holdfast::Histogram& histogram) {
    Entry& entry = families_[name];
    entry.help = help;
    entry.type = "histogram";
    const std::vector<uint64_t> counts = histogram.Counts();
    uint64_t cumulative = 0;
    for (size_t i = 0; i < counts.size(); ++i) {
      cumulative += counts[i];
      MetricLabels with_le = labels;
      with_le.emplace_back("le", i < histogram.bounds().size()
                                     ? absl::StrFormat("%g", histogram.bounds()[i])
                                     : std::string("+Inf"));
      absl::StrAppend(&entry.lines, name, "_bucket", FormatLabels(with_le), " ", cumulative, "\n");
    }
    absl::StrAppend(&entry.lines, name, "_sum", FormatLabels(labels), " ",
                    FormatValue(histogram.sum()), "\n", name, "_count", FormatLabels(labels), " ",
                    cumulative, "\n");
  }
  std::string Render() const {
    std::string out;
    for (const auto& [name, entry] : families_) {
      absl::StrAppend(&out, "# HELP ", name, " ", entry.help, "\n# TYPE ", name, " ", entry.type,
                      "\n", entry.lines);
    }
    return out;
  }

 private:
  struct Entry {
    std::string help, type, lines;
  };
  std::map<std::string, Entry> families_;
};

}  // namespace

void Gauge::Add(double d) {
  double current = value_.load(std::memory_order_relaxed);
  while (!value_.compare_exchange_weak(current, current + d, std::memory_order_relaxed)) {
  }
}

Histogram::Histogram(std::vector<double> bounds)
    : bounds_(std::move(bounds)), counts_(new std::atomic<uint64_t>[bounds_.size() + 1]) {
  for (size_t i = 0; i <= bounds_.size(); ++i) counts_[i] = 0;
}

void Histogram::Observe(double value) {
  const size_t bucket = std::lower_bound(bounds_.begin(), bounds_.end(), value) - bounds_.begin();
  counts_[bucket].fetch_add(1, std::memory_order_relaxed);
  sum_.Add(value);
}

std::vector<uint64_t> Histogram::Counts() const {
  std::vector<uint64_t> counts(bounds_.size() + 1);
  for (size_t i = 0; i < counts.size(); ++i) counts[i] = counts_[i].load(std::memory_order_relaxed);
  return counts;
}

Counter* MetricsRegistry::GetCounter(const std::string& name, const std::string& help,
                                     const MetricLabels& labels) {
  absl::MutexLock lock(&mu_);
  Family& family = families_[name];
  family.help = help;
  family.type = "counter";
  auto& slot = family.counters[labels];
  if (!slot) slot = std::make_unique<Counter>();
  return slot.get();
}

Gauge* MetricsRegistry::GetGauge(const std::string& name, const std::string& help,
                                 const MetricLabels& labels) {
  absl::MutexLock lock(&mu_);
  Family& family = families_[name];
  family.help = help;
  family.type = "gauge";
  auto& slot = family.gauges[labels];
  if (!slot) slot = std::make_unique<Gauge>();
  return slot.get();
}

Histogram* MetricsRegistry::GetHistogram(const std::string& name, const std::string& help,
                                         const MetricLabels& labels,
                                         const std::vector<double>& bounds) {
  absl::MutexLock lock(&mu_);
  Family& family = families_[name];
  family.help = help;
  family.type = "histogram";
  auto& slot = family.histograms[labels];
  if (!slot) slot = std::make_unique<Histogram>(bounds);
  return slot.get();
}

int MetricsRegistry::AddCollector(std::function<void(MetricWriter&)> collector) {
  absl::MutexLock lock(&mu_);
  int id = next_collector_++;
  collectors_.emplace(id, std::move(collector));
  return id;
}

void MetricsRegistry::RemoveCollector(int id) {
  absl::MutexLock lock(&mu_);
  collectors_.erase(id);
}

std::string MetricsRegistry::RenderPrometheus() const {
  TextWriter writer;
  absl::MutexLock lock(&mu_);
  for (const auto& [name, family] : families_) {
    for (const auto& [labels, counter] : family.counters) {
      writer.Sample(name, family.help, family.type, labels, static_cast<double>(counter->value()));
    }
    for (const auto& [labels, gauge] : family.gauges) {
      writer.Sample(name, family.help, family.type, labels, gauge->value());
    }
    for (const auto& [labels, histogram] : family.histograms) {
      writer.Histogram(name, family.help, labels, *histogram);
    }
  }
  for (const auto& [id, collector] : collectors_) collector(writer);
  return writer.Render();
}

}  // namespace holdfast
