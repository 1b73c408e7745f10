#include "src/common/metrics.h"

#include "gtest/gtest.h"

namespace holdfast {
namespace {

TEST(HistogramTest, RendersCumulativeBucketsSumAndCount) {
  MetricsRegistry registry;
  Histogram* h =
      registry.GetHistogram("holdfast_test_seconds", "Test latency", {{"type_url", "t"}}, {0.1, 1});
  for (double v : {0.05, 0.1, 0.5, 7.0}) h->Observe(v);
  EXPECT_EQ(registry.GetHistogram("holdfast_test_seconds", "Test latency", {{"type_url", "t"}}, {}),
            h)
      << "one series per labels";
  EXPECT_EQ(registry.RenderPrometheus(),
            "# HELP holdfast_test_seconds Test latency\n"
            "# TYPE holdfast_test_seconds histogram\n"
            "holdfast_test_seconds_bucket{type_url=\"t\",le=\"0.1\"} 2\n"
            "holdfast_test_seconds_bucket{type_url=\"t\",le=\"1\"} 3\n"
            "holdfast_test_seconds_bucket{type_url=\"t\",le=\"+Inf\"} 4\n"
            "holdfast_test_seconds_sum{type_url=\"t\"} 7.6500000000000004\n"
            "holdfast_test_seconds_count{type_url=\"t\"} 4\n");
}

}  // namespace
}  // namespace holdfast
