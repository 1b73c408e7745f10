#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "envoy/config/core/v3/base.pb.h"
#include "src/snapshot/rollout_policy.h"
#include "src/snapshot/snapshot.h"

namespace holdfast {

// Whether `node` is a canary under `policy`. The same on every replica and
// across restarts: a hash of the id (FNV-1a, not std::hash), or metadata.
bool IsCanary(const RolloutPolicy& policy, const envoy::config::core::v3::Node& node);

// Where the canaries of one group stand with the candidate snapshot.
struct CanaryReport {
  size_t canaries = 0;       // connected
  size_t acked = 0;          // hold the candidate's content for every type they asked for
  size_t nacked = 0;         // rejected the latest response of some type
  std::string nacking_node;  // one of them, its error and the type it rejected, for the reason
  std::string error;
  std::string nacked_type;  // a type URL
};

// The resources of `type_url` that `candidate` adds or changes over
// `stable`, by name: what a NACK of that type rejected. At most `limit`.
std::vector<std::string> ChangedResources(const Snapshot& stable, const Snapshot& candidate,
                                          absl::string_view type_url, size_t limit);

// What was decided about a candidate snapshot: serve it to every proxy, or
// hold it. Made by one replica (from its canaries, or by its operator) and,
// through the RolloutLedger, followed by every replica.
struct RolloutDecision {
  enum class Action { kPromote, kHold };
  std::string candidate;  // the snapshot's version
  Action action = Action::kPromote;
  std::string reason;
  // A hold's: the type URL the canaries rejected; empty when the hold is
  // about the whole candidate (a timeout, the operator).
  std::string rejected_type;
  // The rollout it is about: a node group with a policy of its own, or ""
  // for every other group (RolloutPolicies).
  std::string group;
  std::string replica;  // which one decided ("" in the state machine's own verdicts)
  std::string at;       // when (RFC 3339), for people
};

absl::string_view RolloutActionName(RolloutDecision::Action action);  // "promote", "hold"

// The rollout of one node group: a state machine over snapshots offered by
// the config source and reports about the canaries, with time passed in (no
// clock, no threads). At every moment a proxy of the group sees one of two
// complete snapshots: the stable one, or (canaries, while a rollout bakes)
// the candidate; never a mix.
//
//   idle ──offer──> baking ──all ACKed, bake passed──> idle (promoted)
//                     │  └──offer (newer)──> baking (superseded, bake restarts)
//                     └──a NACK, or not all ACKed by the timeout──> held
//   held ──offer──> baking (a later snapshot rolls out normally)
//
// The first snapshot of a group is stable at once: nothing older is
// protected. With no canary connected, a candidate is promoted once the
// bake time has passed. Promote() and Abort() are the operator's.
class Rollout {
 public:
  enum class Stage { kIdle, kBaking, kHeld };

  // With a disabled policy (no canaries), every snapshot offered is stable
  // at once.
  explicit Rollout(RolloutPolicy policy) : policy_(std::move(policy)) {}

  // A changed policy applies from now on: a new bake or timeout to the
  // candidate baking, the canaries it chooses to the next report. A policy
  // that chooses no canaries takes the next offer as stable at once.
  void SetPolicy(RolloutPolicy policy) { policy_ = std::move(policy); }
  const RolloutPolicy& policy() const { return policy_; }

  void Offer(SnapshotPtr snapshot, absl::Time now);
  // What the canaries' report calls for while baking: a hold (a NACK, or
  // not all ACKed by the timeout), a promotion (all ACKed and baked), or
  // nothing yet. Changes nothing: Apply does.
  std::optional<RolloutDecision> Judge(const CanaryReport& report, absl::Time now) const;
  // Applies a decision about the current candidate (one about another
  // snapshot changes nothing): a hold while baking, a promotion while
  // baking or held. Whether it changed the stage.
  bool Apply(const RolloutDecision& decision, absl::Time now);
  // Judge, then Apply.
  void Observe(const CanaryReport& report, absl::Time now);
  // Serves the candidate to everyone now (baking or held).
  bool Promote(absl::Time now);
  // Holds the candidate: canaries go back to the stable snapshot.
  bool Abort(absl::Time now);

  Stage stage() const { return stage_; }
  const SnapshotPtr& stable() const { return stable_; }
  // What canaries see: the candidate while baking, else the stable one.
  const SnapshotPtr& canary_view() const { return stage_ == Stage::kBaking ? candidate_ : stable_; }
  const SnapshotPtr& candidate() const { return candidate_; }
  // Why the rollout is held (the NACK's error detail, the timeout, the
  // operator), or how the last candidate was promoted.
  const std::string& reason() const { return reason_; }
  // While held: the type URL the canaries rejected, or empty when the hold
  // is about the whole candidate.
  const std::string& held_type() const { return held_type_; }
  absl::Time since() const { return since_; }

 private:
  // "changed Cluster: ns/a, ns/b": what the candidate changed in a type.
  std::string DescribeChanges(absl::string_view type_url) const;
  void PromoteCandidate(std::string how, absl::Time now);
  void Hold(std::string why, std::string type_url, absl::Time now);

  RolloutPolicy policy_;
  Stage stage_ = Stage::kIdle;
  SnapshotPtr stable_;
  SnapshotPtr candidate_;                    // baking or held; null when idle
  absl::Time since_ = absl::InfinitePast();  // when the stage began
  std::string reason_;
  std::string held_type_;
};

absl::string_view RolloutStageName(Rollout::Stage stage);  // "idle", "baking", "held"

}  // namespace holdfast
