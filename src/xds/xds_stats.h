#pragma once

#include <cstdint>
#include <string>

#include "src/common/metrics.h"

namespace holdfast {

// The xDS server's metrics, by resource type.
class XdsStats {
 public:
  explicit XdsStats(MetricsRegistry* registry);

  void StreamOpened(const std::string& kind);
  void StreamClosed();
  void ResponseSent(const std::string& type_url, size_t resources, size_t bytes);
  void Ack(const std::string& type_url);
  void Nack(const std::string& type_url);
  void StaleRequest(const std::string& type_url);
  // A response could not be written because the previous one is still in
  // flight; the stream will send the newest state when it drains.
  void Coalesced();

 private:
  MetricsRegistry* registry_;
  Gauge* connected_;
  Counter* coalesced_;
};

}  // namespace holdfast
