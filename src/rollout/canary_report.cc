#include "src/rollout/canary_report.h"

namespace holdfast {
namespace {

bool HoldsCandidate(const ProxyView& proxy, const SnapshotPtr& candidate) {
  for (const auto& [type, progress] : proxy.types) {
    if (progress.acked_version != progress.last_sent_version) return false;  // one in flight
    const HeldResources held = ResourcesOf(progress.acked, type);
    const HeldResources wanted = ResourcesOf(HeldView{candidate, progress.acked.selection}, type);
    if (held.present.size() != wanted.present.size()) return false;
    for (const auto& [name, resource] : wanted.present) {
      auto it = held.present.find(name);
      if (it == held.present.end() || it->second->version() != resource->version()) return false;
    }
  }
  return true;
}

}  // namespace

CanaryReport ReportCanaries(const std::vector<ProxyView>& canaries, const SnapshotPtr& candidate) {
  CanaryReport report;
  for (const ProxyView& proxy : canaries) {
    ++report.canaries;
    const NackRecord* nack = nullptr;
    std::string nacked_type;
    for (const auto& [type, progress] : proxy.types) {
      if (progress.nack.has_value() && progress.nack->version == progress.last_sent_version) {
        nack = &*progress.nack;
        nacked_type = type;
      }
    }
    if (nack != nullptr) {
      if (report.nacked++ == 0) {
        report.nacking_node = proxy.node_id;
        report.error = nack->error;
        report.nacked_type = std::move(nacked_type);
      }
    } else if (candidate != nullptr && HoldsCandidate(proxy, candidate)) {
      ++report.acked;
    }
  }
  return report;
}

}  // namespace holdfast
