#pragma once

#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "src/common/shared_document.h"
#include "src/rollout/rollout.h"

namespace holdfast {

// The decisions about candidate snapshots that the replicas of a
// deployment share, kept in one SharedDocument (an etcd key, a ConfigMap;
// in memory for a replica without a store). The first decision recorded
// about a candidate stands and every replica follows it: a hold seen by
// any replica holds the rollout on all of them, and no replica holds a
// candidate another has already promoted. Only the operator's decisions
// overrule one that stands. Snapshot versions are digests of content, so
// replicas serving the same objects name a candidate alike. Decisions are
// per rollout: a node group with a policy of its own, or "" for the rest.
//
// The document is JSON, the newest decisions last (the latest kKept):
//   {"decisions": [{"candidate": "...", "action": "hold", "reason": "...",
//                   "rejected_type": "...", "group": "edge",
//                   "replica": "a", "at": "2026-12-02T10:00:00.000Z"}]}
// (rejected_type and group may be absent: "").
// An unreadable document (edited by hand) fails Find with DataLoss naming
// it, and is replaced by the next Record. Thread-safe: calls go to the
// store and block up to its call timeout.
class RolloutLedger {
 public:
  static constexpr size_t kKept = 32;

  explicit RolloutLedger(SharedDocument* document) : document_(document) {}

  // Records `decision` unless one about its candidate (in its group) is
  // already recorded; `overrule` replaces that one. Returns the decision
  // that stands.
  absl::StatusOr<RolloutDecision> Record(const RolloutDecision& decision, bool overrule);
  // The decision recorded about `candidate` in `group`'s rollout, if any.
  absl::StatusOr<std::optional<RolloutDecision>> Find(absl::string_view candidate,
                                                      absl::string_view group = "");
  // Where the decisions are kept.
  std::string Describe() const { return document_->Describe(); }

 private:
  SharedDocument* document_;
};

}  // namespace holdfast
