#include "src/rollout/canary_report.h"

namespace holdfast {
namespace {

// Whether `acked` holds what `candidate` has of `type` for the same
// selection. Compared in place, four times a second for every canary: at
// 10,000 proxies, copying both sides into maps cost a quarter of a core
// for as long as a rollout baked.
bool HoldsSameResources(const HeldView& acked, const Snapshot& candidate, const std::string& type) {
  const ResourceMap& wanted = candidate.Resources(type);
  if (acked.snapshot == nullptr) {
    if (acked.selection.wildcard) return wanted.empty();
    if (acked.selection.names == nullptr) return true;
    for (const std::string& name : acked.selection.names->names()) {
      if (wanted.contains(name)) return false;
    }
    return true;
  }
  if (acked.snapshot.get() == &candidate) return true;
  // The type's version digests every name and version of the type.
  if (acked.selection.wildcard)
    return acked.snapshot->TypeVersion(type) == candidate.TypeVersion(type);
  if (acked.selection.names == nullptr) return true;
  const ResourceMap& held = acked.snapshot->Resources(type);
  for (const std::string& name : acked.selection.names->names()) {
    auto want = wanted.find(name);
    auto have = held.find(name);
    if ((want == wanted.end()) != (have == held.end())) return false;
    if (want != wanted.end() && want->second != have->second &&
        want->second->version() != have->second->version()) {
      return false;
    }
  }
  return true;
}

bool HoldsCandidate(const ProxyView& proxy, const SnapshotPtr& candidate) {
  for (const auto& [type, progress] : proxy.types) {
    if (progress.acked_version != progress.last_sent_version) return false;  // one in flight
    if (!HoldsSameResources(progress.acked, *candidate, type)) return false;
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
