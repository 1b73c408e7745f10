#include "src/xds/xds_stats.h"

#include "src/snapshot/resource.h"

namespace holdfast {

XdsStats::XdsStats(MetricsRegistry* registry)
    : registry_(registry),
      connected_(registry->GetGauge("holdfast_connected_proxies",
                                    "xDS streams currently open on this replica")),
      coalesced_(registry->GetCounter(
          "holdfast_xds_coalesced_updates_total",
          "Snapshot updates folded into a later response because a write was in flight")) {}

void XdsStats::StreamOpened(const std::string& kind) {
  connected_->Add(1);
  registry_->GetCounter("holdfast_xds_streams_opened_total", "xDS streams opened", {{"kind", kind}})
      ->Increment();
}

void XdsStats::StreamClosed() { connected_->Add(-1); }

void XdsStats::IdentityRefused(absl::string_view reason) {
  registry_
      ->GetCounter("holdfast_xds_identity_refusals_total",
                   "xDS streams refused because node.id is not the client certificate's identity",
                   {{"reason", std::string(reason)}})
      ->Increment();
}

absl::string_view TypeUrlLabel(absl::string_view type_url) {
  static constexpr absl::string_view kKnown[] = {
      type_url::kListener,
      type_url::kRouteConfiguration,
      type_url::kCluster,
      type_url::kClusterLoadAssignment,
      type_url::kSecret,
      type_url::kRuntime,
      "type.googleapis.com/envoy.config.route.v3.ScopedRouteConfiguration",
      "type.googleapis.com/envoy.config.route.v3.VirtualHost",
      "type.googleapis.com/envoy.config.core.v3.TypedExtensionConfig",
  };
  for (absl::string_view known : kKnown) {
    if (type_url == known) return known;
  }
  return "other";
}

XdsStats::TypeCounters& XdsStats::ForType(absl::string_view type_url) {
  const absl::string_view label = TypeUrlLabel(type_url);
  absl::MutexLock lock(&mu_);
  auto it = by_type_.find(label);
  if (it != by_type_.end()) return it->second;
  const MetricLabels labels = {{"type_url", std::string(label)}};
  TypeCounters counters{
      registry_->GetCounter("holdfast_xds_responses_sent_total", "xDS responses (pushes) sent",
                            labels),
      registry_->GetCounter("holdfast_xds_resources_sent_total",
                            "Resources carried by xDS responses", labels),
      registry_->GetCounter("holdfast_xds_bytes_sent_total", "Bytes of xDS responses", labels),
      registry_->GetCounter("holdfast_xds_acks_total", "ACKs received", labels),
      registry_->GetCounter("holdfast_xds_nacks_total", "NACKs received", labels),
      registry_->GetCounter("holdfast_xds_stale_requests_total",
                            "State-of-the-world requests ignored for a stale nonce", labels),
      registry_->GetHistogram(
          "holdfast_xds_push_seconds",
          "From a snapshot's publication (or the request asking for it, if later) to the "
          "proxy's ACK of the response carrying it",
          labels, {0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300})};
  return by_type_.emplace(std::string(label), counters).first->second;
}

void XdsStats::ResponseSent(const std::string& type_url, size_t resources, size_t bytes) {
  TypeCounters& counters = ForType(type_url);
  counters.responses->Increment();
  counters.resources->Increment(resources);
  counters.bytes->Increment(bytes);
}

void XdsStats::Ack(const std::string& type_url, absl::Duration push_latency) {
  TypeCounters& counters = ForType(type_url);
  counters.acks->Increment();
  counters.push_seconds->Observe(absl::ToDoubleSeconds(push_latency));
}

void XdsStats::Nack(const std::string& type_url) { ForType(type_url).nacks->Increment(); }

void XdsStats::StaleRequest(const std::string& type_url) { ForType(type_url).stale->Increment(); }

void XdsStats::Coalesced() { coalesced_->Increment(); }

}  // namespace holdfast
