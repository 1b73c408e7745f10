#pragma once

#include <map>
#include <string>

#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "nlohmann/json.hpp"
#include "src/common/metrics.h"
#include "src/common/poller.h"
#include "src/common/random.h"
#include "src/election/lease_elector.h"
#include "src/etcd/key_value_store.h"
#include "src/status/status_counters.h"
#include "src/translate/status.h"

namespace holdfast {

// An object's status as stored (docs/etcd.md), without writer and term:
// what is compared to decide whether a stored status needs rewriting.
// Bounded: at most 20 reasons, each message at most 1 KiB.
nlohmann::json StoredStatusJson(const ObjectKey& key, const ObjectStatus& status);

// Writes object statuses to etcd under PREFIX/status/ while this replica
// leads, and only then.
//
// Each write is a transaction that first compares the create revision of
// the leader's election key with its term: once the term has ended (the
// lease expired and the key is gone, or another replica leads), etcd refuses
// the write. A refused write is counted, reported to the elector (which
// steps down) and never retried under that term. A status is written only
// when it differs from what the store holds. On gaining a term the writer
// reads every stored status and reconciles: it rewrites what differs and
// deletes statuses of objects that no longer exist.
class StatusWriter {
 public:
  struct Options {
    std::string prefix = "/holdfast";
    std::string replica_id;
    // A pass that failed is retried after a jittered exponential backoff
    // (src/common/backoff.h) from min_backoff up to max_backoff, reset by a
    // pass that succeeds.
    absl::Duration min_backoff = absl::Milliseconds(200);
    absl::Duration max_backoff = absl::Seconds(5);
    int max_ops_per_txn = 64;  // etcd refuses more than 128 by default
  };

  // `store`, `elector`, `random` (which jitters retries) and `metrics` must
  // outlive the writer.
  StatusWriter(Options options, KeyValueStore* store, LeaseElector* elector, Random& random,
               MetricsRegistry* metrics);
  ~StatusWriter();

  // The statuses to publish (the latest translation's). Thread-safe.
  void Update(const StatusMap& statuses);
  // Runs Sync() after every Update() and every leadership change, on a
  // Poller's thread; a pass that failed is retried after a jittered
  // backoff (Options::min_backoff to max_backoff), or sooner when woken.
  void Start();
  void Stop();

  // One pass: if leading, brings the store in line with the latest
  // statuses. FailedPrecondition when the store refused a write as fenced.
  absl::Status Sync();

 private:
  std::string StoreKey(const ObjectKey& key) const;
  absl::Status Reconcile(const Leadership& leadership) ABSL_EXCLUSIVE_LOCKS_REQUIRED(sync_mu_);
  absl::Status Commit(const Leadership& leadership, etcdserverpb::TxnRequest& txn);

  const Options options_;
  KeyValueStore* store_;
  LeaseElector* elector_;
  Random& random_;
  StatusCounters counters_;

  absl::Mutex mu_;
  StatusMap desired_ ABSL_GUARDED_BY(mu_);

  // Sync() only (one caller at a time).
  absl::Mutex sync_mu_;
  int64_t term_ ABSL_GUARDED_BY(sync_mu_) = 0;  // 0: not reconciled with any term
  std::map<std::string, std::string> stored_ ABSL_GUARDED_BY(sync_mu_);  // key -> content

  Poller poller_;  // runs Sync(): woken by changes, timed for retries
};

}  // namespace holdfast
