#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "src/common/metrics.h"

namespace holdfast {

// The label a type URL gets in metrics: the type URL itself for the types
// xDS defines, "other" for anything else. Labels come from this closed set,
// never from what a client sends, so clients cannot grow the metric series.
absl::string_view TypeUrlLabel(absl::string_view type_url);

// The xDS server's metrics, by resource type (see TypeUrlLabel).
class XdsStats {
 public:
  explicit XdsStats(MetricsRegistry* registry);

  void StreamOpened(const std::string& kind);
  void StreamClosed();
  // A stream refused by --xds-client-identity; `reason` is an
  // IdentityRefusalLabel (a closed set).
  void IdentityRefused(absl::string_view reason);
  void ResponseSent(const std::string& type_url, size_t resources, size_t bytes);
  // An ACK of a response owed for `push_latency`: since the snapshot it
  // carries was published, or since the request that asked for it if later.
  void Ack(const std::string& type_url, absl::Duration push_latency);
  void Nack(const std::string& type_url);
  void StaleRequest(const std::string& type_url);
  // A response could not be written because the previous one is still in
  // flight; the stream will send the newest state when it drains.
  void Coalesced();

 private:
  // Counters of one type URL, looked up once per response instead of three
  // registry lookups (each building a label vector) under the registry lock.
  struct TypeCounters {
    Counter* responses;
    Counter* resources;
    Counter* bytes;
    Counter* acks;
    Counter* nacks;
    Counter* stale;
    Histogram* push_seconds;
  };
  TypeCounters& ForType(absl::string_view type_url);

  MetricsRegistry* registry_;
  absl::Mutex mu_;
  std::map<std::string, TypeCounters, std::less<>> by_type_ ABSL_GUARDED_BY(mu_);
  Gauge* connected_;
  Counter* coalesced_;
};

}  // namespace holdfast
