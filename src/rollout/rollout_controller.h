#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "nlohmann/json.hpp"
#include "src/common/clock.h"
#include "src/common/metrics.h"
#include "src/common/poller.h"
#include "src/common/shared_document.h"
#include "src/rollout/rollout.h"
#include "src/rollout/rollout_ledger.h"
#include "src/snapshot/snapshot_cache.h"
#include "src/translate/status.h"
#include "src/xds/proxy_state.h"

namespace holdfast {

// Serves one staged rollout: the config source (through the last-known-good
// copy) publishes into `staged`; proxies read `serving`, where the
// controller keeps its node group (the default group for the rollout of
// every group without its own, Options::group "") on the stable snapshot
// and CanaryKey(group) (what its canary streams watch) on what canaries
// should see. Every check interval it reports its canaries (the proxies
// marked canary of its rollout in `proxies`) to the Rollout, which
// promotes or holds. A disabled policy passes every snapshot on at once.
//
// Decisions go through a RolloutLedger shared by the replicas: a verdict of
// this replica's canaries (or its operator) is recorded there first, and
// the decision that stands is applied, so every replica promotes or holds
// a candidate alike. While a candidate bakes or is held, the ledger is read
// every ledger_interval for another replica's decision. A hold that cannot
// be recorded (store unreachable) applies here at once and is recorded
// later; a promotion waits until it is recorded (another replica's hold
// could not be seen).
//
// The stable snapshot is persisted (state_dir/rollout-stable.snapshot), so
// a replica restarted mid-rollout takes what it restores or reads next as
// a candidate again, not as stable, and follows the ledger's decision
// about it. Thread-safe.
class RolloutController {
 public:
  struct Options {
    RolloutPolicy policy;
    // The node group whose own rollout this is; "": the rollout of every
    // group without one (RolloutPolicies).
    std::string group;
    std::string state_dir;  // empty: the stable snapshot is not persisted
    // Whether Start() takes a persisted stable snapshot as stable: at a
    // replica's start, yes; for a rollout made while serving (a policy
    // added to the configuration) no, what `staged` holds then is stable.
    bool restore_stable = true;
    // Stable at once when nothing was restored: for a rollout made while
    // serving, what its proxies saw until then.
    SnapshotPtr initial_stable;
    absl::Duration check_interval = absl::Milliseconds(250);
    // Where the replicas share decisions; null: in this process only.
    SharedDocument* shared = nullptr;
    std::string replica_id;  // named in the decisions this replica makes
    absl::Duration ledger_interval = absl::Seconds(1);
  };

  RolloutController(Options options, SnapshotCache* staged, SnapshotCache* serving,
                    const ProxyRegistry* proxies, const Clock& clock, MetricsRegistry* metrics);
  ~RolloutController();

  // Called with the statuses a hold puts on gateway objects
  // (HeldObjectStatuses) when the rollout is held, and with none when the
  // hold ends. Called with the controller's lock held: it must not call the
  // controller or wait for the config source's work
  // (ConfigSource::SetStatusOverlay does neither). Set before Start().
  void OnHeldStatuses(std::function<void(StatusMap)> listener) {
    held_listener_ = std::move(listener);
  }

  void Start();
  void Stop();
  // The rollout's new policy (from the configuration), from now on.
  void SetPolicy(RolloutPolicy policy);
  // Stops, and forgets the persisted stable snapshot: the rollout is gone
  // (its policy was removed), so a later one must not restore it.
  void Retire();
  // One check now (the poller's step; tests call it with simulated time).
  void Check();
  // /debug/rollout.
  nlohmann::json ToJson() const;
  const std::string& group() const { return options_.group; }
  // The operator's: serve the candidate to everyone now; hold it (canaries
  // back on the stable snapshot). {"done": whether there was one, "rollout"}.
  nlohmann::json Promote();
  nlohmann::json Abort();

 private:
  void Offer(SnapshotPtr snapshot);
  // The operator's decision about the current candidate, recorded over
  // whatever stands.
  nlohmann::json Decide(RolloutDecision::Action action);
  // What to ask the ledger this check: record a verdict (or a hold not yet
  // recorded), look for another replica's decision, or nothing.
  struct LedgerCall {
    std::optional<RolloutDecision> record;
    bool overrule = false;  // the operator's decision
    std::string find;       // a candidate's version
  };
  // A decision applied here that the store has not taken yet.
  struct Unrecorded {
    RolloutDecision decision;
    bool overrule = false;
  };
  LedgerCall NextLedgerCall(absl::Time now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Applies what the ledger answered to `call`.
  void Follow(const LedgerCall& call,
              const absl::StatusOr<std::optional<RolloutDecision>>& standing, absl::Time now)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  RolloutDecision Stamped(RolloutDecision decision) const;
  nlohmann::json ToJsonLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Publishes what the rollout says, and records a change of stage.
  void ApplyLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Tells the held-statuses listener when the held candidate changes.
  void ReportHeldObjects() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  std::string StablePath() const;
  // The serving cache's key for what the group's proxies (not canaries) see.
  std::string StableKey() const;

  const Options options_;  // policy: the one it started with (rollout_ has the current one)
  const std::string name_;  // in logs: "rollout", "rollout of group edge"
  SnapshotCache* staged_;
  SnapshotCache* serving_;
  const ProxyRegistry* proxies_;
  const Clock& clock_;
  Counter* promotions_;
  Counter* holds_;
  Gauge* baking_;
  Gauge* held_;
  Gauge* canaries_;

  mutable absl::Mutex mu_;
  Rollout rollout_ ABSL_GUARDED_BY(mu_);
  CanaryReport last_report_ ABSL_GUARDED_BY(mu_);
  SnapshotPtr published_stable_ ABSL_GUARDED_BY(mu_);
  SnapshotPtr published_canary_ ABSL_GUARDED_BY(mu_);
  Rollout::Stage published_stage_ ABSL_GUARDED_BY(mu_) = Rollout::Stage::kIdle;
  SnapshotPtr logged_candidate_ ABSL_GUARDED_BY(mu_);
  std::string persist_error_ ABSL_GUARDED_BY(mu_);
  bool retired_ ABSL_GUARDED_BY(mu_) = false;
  std::optional<Unrecorded> unrecorded_ ABSL_GUARDED_BY(mu_);
  absl::Time next_ledger_read_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();
  std::string ledger_error_ ABSL_GUARDED_BY(mu_);
  std::string reported_held_ ABSL_GUARDED_BY(mu_);              // the held candidate's version
  std::vector<std::string> held_objects_ ABSL_GUARDED_BY(mu_);  // "Kind ns/name"
  std::function<void(StatusMap)> held_listener_;

  std::unique_ptr<InMemorySharedDocument> own_document_;  // when no store is shared
  RolloutLedger ledger_;

  std::unique_ptr<SnapshotCache::WatchHandle> watch_;
  Poller poller_;
};

}  // namespace holdfast
