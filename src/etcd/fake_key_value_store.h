#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "src/common/clock.h"
#include "src/etcd/key_value_store.h"

namespace holdfast {

// A KeyValueStore in memory, with etcd's revisions, for unit tests.
// Thread-safe.
//
// Like etcd: one store revision raised by every write, create and mod
// revisions and a version per key, reads at any revision not compacted,
// watches from any revision not compacted, transactions with compares on
// value, version, create and mod revision and lease, and put, delete and
// range ops (range with limit and sorting). Not modelled: leases expiring
// (RevokeLease() ends one), nested transactions, compares over key ranges,
// pagination, authentication, silent (stalled) streams.
//
// SetUnavailable(true) cuts this client off: every KeyValueStore call fails
// Unavailable and open watches end so. The test helpers (Put, Delete,
// Compact, RevokeLease) act on the store itself and keep working, like
// other clients of a store that only this replica cannot reach.
//
// Progress notifications go out every options.progress_interval of
// `clock`; with a SimulatedClock they go out when the test advances it.
class FakeKeyValueStore : public KeyValueStore {
 public:
  explicit FakeKeyValueStore(const Clock& clock = Clock::Real());

  // KeyValueStore.
  absl::StatusOr<RangeResult> GetPrefix(const std::string& prefix, int64_t revision) override;
  absl::StatusOr<etcdserverpb::TxnResponse> Txn(const etcdserverpb::TxnRequest& request) override;
  absl::Status Watch(const WatchOptions& options,
                     const std::function<void(const WatchBatch&)>& on_batch,
                     absl::Notification* stop, int64_t* compacted_revision) override;
  Contact contact() const override;
  absl::Duration call_timeout() const override { return absl::Seconds(5); }
  std::string current_endpoint() const override { return "fake"; }

  // Test helpers: each returns the store revision after it.
  int64_t Put(const std::string& key, const std::string& value, int64_t lease = 0);
  // Deletes `key` (every key under it when `prefix`); no write if none.
  int64_t Delete(const std::string& key, bool prefix = false);
  // Deletes every key bound to `lease` in one write, as an expired lease.
  int64_t RevokeLease(int64_t lease);
  // Forgets every revision below `revision` (at most the current one).
  void Compact(int64_t revision);
  void SetUnavailable(bool unavailable);
  int64_t revision() const;
  // Watches open now.
  int watchers() const;

 private:
  // One version of a key; a deleted key's last version is a tombstone.
  struct Record {
    std::string value;
    int64_t create_revision = 0;
    int64_t mod_revision = 0;
    int64_t version = 0;
    int64_t lease = 0;
    bool deleted = false;
  };
  struct Logged {
    int64_t revision = 0;
    WatchEvent event;
  };

  // A write in progress: its revision, raised only if it changes a key.
  struct Write {
    int64_t revision = 0;
    bool changed = false;
  };
  Write BeginWrite() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void EndWrite(const Write& write) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  const Record* Current(const std::string& key) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void PutLocked(Write& write, const std::string& key, const std::string& value, int64_t lease)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void DeleteLocked(Write& write, const std::string& key) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The live versions of keys in [key, range_end) (etcd's range rules) as of
  // `revision`, sorted by key.
  std::vector<std::pair<std::string, Record>> ReadLocked(const std::string& key,
                                                         const std::string& range_end,
                                                         int64_t revision) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Unavailable while cut off, OutOfRange for a compacted or future read.
  absl::Status CheckReadable(int64_t revision) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  bool Compares(const etcdserverpb::Compare& compare) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void ApplyOp(Write& write, const etcdserverpb::RequestOp& op, etcdserverpb::ResponseOp* response)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void ApplyRange(const etcdserverpb::RangeRequest& request, etcdserverpb::RangeResponse* response)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Events under `prefix` from `from` on.
  std::vector<WatchEvent> EventsSince(const std::string& prefix, int64_t from) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Waits briefly for something to tell the watch; fills `batch` (revision
  // 0: nothing to send) or says why the watch ends.
  absl::Status NextBatch(const WatchOptions& options, absl::Notification* stop, int64_t& next,
                         absl::Duration& last_sent, WatchBatch& batch, int64_t* compacted_revision)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void RecordOutcome(bool ok) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status UnavailableError() const;

  const Clock& clock_;
  mutable absl::Mutex mu_;
  int64_t revision_ ABSL_GUARDED_BY(mu_) = 1;  // etcd starts at 1
  int64_t compacted_ ABSL_GUARDED_BY(mu_) = 0;
  std::map<std::string, std::vector<Record>> history_ ABSL_GUARDED_BY(mu_);
  std::vector<Logged> log_ ABSL_GUARDED_BY(mu_);
  bool unavailable_ ABSL_GUARDED_BY(mu_) = false;
  int watchers_ ABSL_GUARDED_BY(mu_) = 0;
  absl::Duration last_success_ ABSL_GUARDED_BY(mu_) = -absl::InfiniteDuration();
  bool failing_ ABSL_GUARDED_BY(mu_) = false;  // the latest call failed
};

}  // namespace holdfast
