#pragma once

#include "src/common/metrics.h"

namespace holdfast {

// What every status writer counts, whatever its store (docs/reference.md).
struct StatusCounters {
  Counter* writes;
  Counter* fenced;  // refused by the store because the writer's term had ended
  Counter* errors;

  static StatusCounters Register(MetricsRegistry* metrics) {
    return {metrics->GetCounter("holdfast_status_writes_total",
                                "Object statuses written to the store"),
            metrics->GetCounter("holdfast_status_writes_fenced_total",
                                "Status writes the store refused because their term had ended"),
            metrics->GetCounter("holdfast_status_write_errors_total",
                                "Status writes that failed for other reasons")};
  }
};

}  // namespace holdfast
