#pragma once

#include <functional>
#include <map>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "src/snapshot/snapshot.h"
#include "src/translate/status.h"

namespace holdfast {

// The statuses a held rollout puts on gateway objects: every object behind
// a resource that `candidate` adds or changes over `stable`
// (OriginsOfChange), of `rejected_type` or, when it is empty (a timeout,
// the operator), of any type, is Rejected with `reason`, serving its last
// good version where `stable` has one. Laid over the translation's
// statuses (ConfigPipeline::SetOverlay).
StatusMap HeldObjectStatuses(const Snapshot& stable, const Snapshot& candidate,
                             absl::string_view rejected_type, absl::string_view reason);

// The held statuses of several rollouts (one per node group with a policy
// of its own) as one overlay: each Set hands `sink` the union, reasons of
// an object held in several rollouts side by side. Thread-safe; `sink` is
// called with the lock held, in the order of the Sets.
class HeldStatusUnion {
 public:
  explicit HeldStatusUnion(std::function<void(StatusMap)> sink) : sink_(std::move(sink)) {}
  void Set(const std::string& rollout, StatusMap statuses);

 private:
  const std::function<void(StatusMap)> sink_;
  absl::Mutex mu_;
  std::map<std::string, StatusMap> by_rollout_ ABSL_GUARDED_BY(mu_);
};

}  // namespace holdfast
