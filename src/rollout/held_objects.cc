#include "src/rollout/held_objects.h"

#include "absl/strings/str_cat.h"
#include "src/translate/resource_origin.h"

namespace holdfast {
namespace {

void HoldObjectsOfType(const Snapshot& stable, const Snapshot& candidate, absl::string_view type,
                       absl::string_view reason, StatusMap& held) {
  const ResourceMap& before = stable.Resources(type);
  for (const auto& [name, resource] : candidate.Resources(type)) {
    auto it = before.find(name);
    const Resource* previous = it == before.end() ? nullptr : it->second.get();
    if (previous != nullptr && previous->version() == resource->version()) continue;
    for (ResourceOrigin& origin : OriginsOfChange(previous, *resource)) {
      ObjectStatus& status = held[origin.object];
      if (status.reasons.empty()) {
        status.key = origin.object;
        status.Reject(
            "", absl::StrCat(
                    "held by the staged rollout (every proxy keeps its previous configuration): ",
                    reason));
      }
      status.serving_last_good = status.serving_last_good || origin.served_before;
    }
  }
}

}  // namespace

StatusMap HeldObjectStatuses(const Snapshot& stable, const Snapshot& candidate,
                             absl::string_view rejected_type, absl::string_view reason) {
  StatusMap held;
  if (!rejected_type.empty()) {
    HoldObjectsOfType(stable, candidate, rejected_type, reason, held);
    return held;
  }
  for (const std::string& type : candidate.TypeUrls()) {
    HoldObjectsOfType(stable, candidate, type, reason, held);
  }
  return held;
}

void HeldStatusUnion::Set(const std::string& rollout, StatusMap statuses) {
  absl::MutexLock lock(&mu_);
  if (statuses.empty()) {
    by_rollout_.erase(rollout);
  } else {
    by_rollout_[rollout] = std::move(statuses);
  }
  StatusMap all;
  for (const auto& [name, held] : by_rollout_) all = MergeStatuses(std::move(all), held);
  sink_(std::move(all));
}

}  // namespace holdfast
