#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "nlohmann/json.hpp"
#include "src/common/clock.h"
#include "src/common/metrics.h"
#include "src/common/shared_document.h"
#include "src/rollout/rollout_controller.h"
#include "src/snapshot/rollout_policy.h"
#include "src/snapshot/snapshot_cache.h"
#include "src/translate/status.h"
#include "src/xds/canary_router.h"
#include "src/xds/proxy_state.h"

namespace holdfast {

// Runs the staged rollouts a replica's policies call for, and changes them
// as the policies change. The policies are the flags' (--rollout-*) with
// the configuration's over them (RolloutPolicy objects, carried by each
// snapshot): a snapshot takes effect under the policies it carries, so a
// change that adds canaries is itself rolled out to them first.
//
// Every snapshot the config source stages goes through here. With no
// policy that chooses canaries it is served at once, as if there were no
// rollouts. Otherwise one RolloutController per rollout (every group
// without its own: "", and each group with a policy) serves it in stages.
// A rollout made while serving starts from what its proxies see at that
// moment; a removed one is retired (its proxies follow the rollout of
// every other group, its persisted stable snapshot is deleted). Canaries
// are chosen through `router`, which moves connected streams when the
// choice changes. Thread-safe.
class RolloutManager {
 public:
  struct Options {
    RolloutPolicies flags;
    std::string state_dir;
    // Where the replicas share decisions; null: in this process only.
    SharedDocument* shared = nullptr;
    std::string replica_id;
    absl::Duration check_interval = absl::Milliseconds(250);
    absl::Duration ledger_interval = absl::Seconds(1);
  };

  RolloutManager(Options options, SnapshotCache* staged, SnapshotCache* serving,
                 const ProxyRegistry* proxies, CanaryRouter* router, const Clock& clock,
                 MetricsRegistry* metrics);
  ~RolloutManager();

  // The statuses a rollout's hold puts on gateway objects (none: the hold
  // ended, or the rollout is gone). Same contract as
  // RolloutController::OnHeldStatuses. Set before Start().
  void OnHeldStatuses(std::function<void(const std::string& rollout, StatusMap)> listener) {
    held_listener_ = std::move(listener);
  }

  // Takes what is staged, and every later snapshot.
  void Start();
  void Stop();

  // /debug/rollout: the rollout of every group without its own, with
  // "groups" the others; {"enabled": false} when there is none.
  nlohmann::json ToJson() const;
  // The operator's, about rollout `group` ("": every group without its
  // own). {"enabled": false, "error"} when there is no such rollout.
  nlohmann::json Promote(const std::string& group);
  nlohmann::json Abort(const std::string& group);
  // One check of every rollout now (tests, with simulated time and a long
  // check interval).
  void CheckNow();

 private:
  using Controllers = std::map<std::string, std::shared_ptr<RolloutController>>;

  void Offer(SnapshotPtr snapshot);
  // Makes the rollouts `wanted` calls for: new ones first, then the
  // canaries' rule, then retires the ones gone.
  void Reconcile(const RolloutPolicies& wanted) ABSL_EXCLUSIVE_LOCKS_REQUIRED(offer_mu_);
  std::shared_ptr<RolloutController> MakeController(const std::string& name,
                                                    const RolloutPolicy& policy)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(offer_mu_);
  std::shared_ptr<RolloutController> Find(const std::string& group) const;
  nlohmann::json NoRollout(const std::string& group) const;

  const Options options_;
  SnapshotCache* staged_;
  SnapshotCache* serving_;
  const ProxyRegistry* proxies_;
  CanaryRouter* router_;
  const Clock& clock_;
  MetricsRegistry* metrics_;
  std::function<void(const std::string&, StatusMap)> held_listener_;
  // What the controllers take their offers from: staged, once the policies
  // it carries are in place.
  SnapshotCache feed_;

  // Serializes offers (the staged cache's watcher and Start).
  absl::Mutex offer_mu_ ABSL_ACQUIRED_BEFORE(mu_);
  bool first_offer_ ABSL_GUARDED_BY(offer_mu_) = true;
  mutable absl::Mutex mu_;
  RolloutPolicies policies_ ABSL_GUARDED_BY(mu_);
  Controllers controllers_ ABSL_GUARDED_BY(mu_);
  std::unique_ptr<SnapshotCache::WatchHandle> watch_;
};

}  // namespace holdfast
