#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "etcd/etcdserver/etcdserverpb/rpc.pb.h"

namespace holdfast {

struct KeyValue {
  std::string key;
  std::string value;
  int64_t create_revision = 0;
  int64_t mod_revision = 0;
  int64_t lease = 0;
};

struct RangeResult {
  std::vector<KeyValue> kvs;
  int64_t revision = 0;  // the store revision the result was read at
};

struct WatchEvent {
  enum class Type { kPut, kDelete };
  Type type = Type::kPut;
  KeyValue kv;  // for deletes, only key and mod_revision
};

// One watch response: the events of one or more revisions, in order, or
// only a revision (a progress notification: nothing changed up to it).
struct WatchBatch {
  int64_t revision = 0;
  std::vector<WatchEvent> events;
};

struct WatchOptions {
  std::string prefix;
  int64_t start_revision = 0;  // 0: from now
  // How often to ask for progress, and how long to wait for any answer
  // before the stream is taken for dead (a blackholed store never answers
  // and never closes).
  absl::Duration progress_interval = absl::Seconds(5);
  absl::Duration stall_timeout = absl::Seconds(15);
};

// The end of the key range that holds every key starting with `prefix`.
std::string PrefixRangeEnd(const std::string& prefix);

// A key-value store with etcd's data model, as the etcd config source and
// the status writer use it. EtcdClient implements it on a real etcd
// cluster; FakeKeyValueStore in memory, for unit tests.
//
// Revisions: the store has one revision, raised by one with every write (a
// transaction that writes is one write, however many keys it touches).
// Each key carries the revision that created it (since it last did not
// exist), the revision that last modified it and its version (writes since
// creation). Revisions below the store's compaction revision are gone: a
// read or a watch that needs one fails with OutOfRange, which callers take
// as "list everything again".
//
// Failures: Unavailable or DeadlineExceeded when the store did not answer
// (a write may then have applied or not); PermissionDenied or
// Unauthenticated when it refused this client. Nothing is retried on the
// caller's behalf beyond moving between endpoints: backing off is the
// caller's business. All calls are thread-safe and may block up to
// call_timeout() (Watch until it ends).
class KeyValueStore {
 public:
  // How the store has been answering, over every call and watch of this
  // client: a store that stopped answering shows here as soon as any call
  // times out, long before a quiet watch is taken for dead.
  struct Contact {
    bool failing = false;  // the latest outcome was an endpoint failure
    absl::Duration since_success = absl::InfiniteDuration();
    std::string last_error;
    // Why the store refused this client's credentials or permissions
    // (authentication failed, token or user refused, permission denied),
    // while it does: set by any refused call, cleared by the next call that
    // the store checks against them and that succeeds.
    std::string refused;
  };

  virtual ~KeyValueStore() = default;

  // Every key under `prefix`, sorted by key, read at one revision
  // (`revision`, or the current one when 0), which the result names.
  // OutOfRange if `revision` was compacted.
  virtual absl::StatusOr<RangeResult> GetPrefix(const std::string& prefix, int64_t revision) = 0;

  // Applies `request` atomically at one revision, as etcd does: when every
  // compare holds, the success ops run and `succeeded` is true, else the
  // failure ops run. The response header carries the store revision after
  // the transaction (the write's revision, if it wrote).
  virtual absl::StatusOr<etcdserverpb::TxnResponse> Txn(
      const etcdserverpb::TxnRequest& request) = 0;

  // Watches the keys under `options.prefix` from `options.start_revision`
  // (0: from the next write), calling `on_batch` on this thread with every
  // change, each exactly once, in revision order, a revision never split
  // across batches. A batch without events is a progress notification: no
  // change under the prefix up to its revision. Progress is asked for every
  // `options.progress_interval`, so a healthy quiet watch still hears from
  // the store. Never returns OK: Cancelled once `stop` is notified;
  // OutOfRange if the start revision was compacted (`compacted_revision`,
  // if not null, receives the compaction revision); Unavailable or
  // DeadlineExceeded when the stream broke or stayed silent past
  // `options.stall_timeout`; PermissionDenied when the store refused it.
  virtual absl::Status Watch(const WatchOptions& options,
                             const std::function<void(const WatchBatch&)>& on_batch,
                             absl::Notification* stop, int64_t* compacted_revision) = 0;

  // How the store has been answering (see Contact).
  virtual Contact contact() const = 0;
  // The deadline of one call: a store failing for longer than this without
  // a success is taken as unreachable.
  virtual absl::Duration call_timeout() const = 0;
  // The endpoint calls currently go to, for logs.
  virtual std::string current_endpoint() const = 0;
};

}  // namespace holdfast
