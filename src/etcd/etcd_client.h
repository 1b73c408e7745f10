#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "etcd/etcdserver/etcdserverpb/rpc.grpc.pb.h"
#include "src/common/clock.h"
#include "src/etcd/key_value_store.h"

namespace holdfast {

class WatchKeeper;

struct EtcdClientOptions {
  // "host:port", "http://host:port" or "https://host:port". Calls go to one
  // endpoint at a time and move to the next when it fails.
  std::vector<std::string> endpoints;
  // TLS: used when any is set or an endpoint says https://. The CA checks
  // the server; the certificate and key authenticate this client.
  std::string ca_file;
  std::string cert_file;
  std::string key_file;
  // etcd authentication; empty username: none.
  std::string username;
  std::string password;
  // Deadline of each unary call on one endpoint.
  absl::Duration call_timeout = absl::Seconds(5);
  // HTTP/2 pings on connections with calls in flight, so a connection whose
  // packets are dropped is noticed even while a watch waits for events.
  // etcd refuses pings more often than every 5 s.
  absl::Duration keepalive_time = absl::Seconds(10);
  absl::Duration keepalive_timeout = absl::Seconds(5);
};

// A client of the etcd v3 API. Thread-safe.
//
// Every call has a deadline. A call that fails because its endpoint is
// unreachable, too slow or without a raft leader is retried once on each
// other endpoint, and the client then stays on the endpoint that answered.
// Calls are never retried on the same endpoint: backing off is the caller's
// business. All writes holdfast makes are idempotent, so a write retried
// after a timeout cannot apply twice in a harmful way.
class EtcdClient : public KeyValueStore {
 public:
  static absl::StatusOr<std::unique_ptr<EtcdClient>> Create(EtcdClientOptions options);
  ~EtcdClient() override;

  absl::StatusOr<RangeResult> Get(const std::string& key);
  // Every key under `prefix`, read in pages at one revision (`revision`, or
  // the current one when 0). OutOfRange if `revision` was compacted.
  absl::StatusOr<RangeResult> GetPrefix(const std::string& prefix, int64_t revision = 0) override;
  // Returns the revision of the write.
  absl::StatusOr<int64_t> Put(const std::string& key, const std::string& value, int64_t lease = 0);
  // Returns how many keys were deleted (keys under `key` when `prefix`).
  absl::StatusOr<int64_t> Delete(const std::string& key, bool prefix = false);
  absl::StatusOr<etcdserverpb::TxnResponse> Txn(const etcdserverpb::TxnRequest& request) override;
  absl::Status Compact(int64_t revision);

  // Returns the lease id.
  absl::StatusOr<int64_t> LeaseGrant(absl::Duration ttl);
  // NotFound when the lease has expired or was revoked.
  absl::Status LeaseKeepAlive(int64_t lease);
  absl::Status LeaseRevoke(int64_t lease);

  // Watches `options.prefix` from `options.start_revision`, calling
  // `on_batch` for each response in order, until `stop` is notified
  // (returns Cancelled), the stream breaks or stalls (Unavailable or
  // DeadlineExceeded), or the start revision has been compacted (OutOfRange;
  // `compacted_revision`, if given, receives the compaction revision).
  // The stream requires the member to have a raft leader, so a member cut
  // off from its quorum ends the watch instead of going silent.
  absl::Status Watch(const WatchOptions& options,
                     const std::function<void(const WatchBatch&)>& on_batch,
                     absl::Notification* stop, int64_t* compacted_revision = nullptr) override;

  // The endpoint calls currently go to.
  std::string current_endpoint() const override;

  // How the store has been answering (KeyValueStore::Contact).
  Contact contact() const override;
  absl::Duration call_timeout() const override { return options_.call_timeout; }

 private:
  struct Endpoint {
    std::string address;
    std::unique_ptr<etcdserverpb::KV::Stub> kv;
    std::unique_ptr<etcdserverpb::Lease::Stub> lease;
    std::unique_ptr<etcdserverpb::Watch::Stub> watch;
    std::unique_ptr<etcdserverpb::Auth::Stub> auth;
  };

  explicit EtcdClient(EtcdClientOptions options);
  absl::Status Connect();
  // Runs `call` on the current endpoint, then on each other one while the
  // failure says the endpoint (not the request) is the problem.
  // `checks_access`: the store checks the user's permissions on this call,
  // so its success shows the store accepts them (false for lease grants and
  // renewals, which etcd allows without any permission).
  absl::Status Call(const char* what,
                    const std::function<grpc::Status(Endpoint&, grpc::ClientContext&)>& call,
                    bool checks_access = true);
  void Prepare(grpc::ClientContext& context, absl::Duration timeout);
  absl::Status Authenticate(Endpoint& endpoint);
  // Authenticates unless there is no user or a token is already held.
  absl::Status EnsureToken(Endpoint& endpoint);

  // Reads `stream` until it ends (OK: Finish says why), is compacted past
  // (OutOfRange) or is canceled by the member.
  absl::Status ReadWatch(
      grpc::ClientReaderWriter<etcdserverpb::WatchRequest, etcdserverpb::WatchResponse>& stream,
      const std::string& address, const WatchOptions& options,
      const std::function<void(const WatchBatch&)>& on_batch, WatchKeeper* keeper,
      int64_t* compacted_revision);
  // What a watch stream that ended on its own, with `finish`, means.
  absl::Status WatchEnded(const grpc::Status& finish, const std::string& address);

  // The store answered (if only to say no); `access_checked`: the call
  // was checked against the user's permissions and allowed.
  void RecordSuccess(bool access_checked = false);
  // The endpoint failed: unreachable, too slow or without a leader.
  void RecordFailure(const absl::Status& status);
  // The store refused the credentials or permissions; logged once per
  // refusal that starts, as is the end of it.
  void RecordRefused(const absl::Status& status);

  const EtcdClientOptions options_;
  std::vector<Endpoint> endpoints_;
  mutable absl::Mutex contact_mu_;
  absl::Duration last_success_ ABSL_GUARDED_BY(contact_mu_) = -absl::InfiniteDuration();
  absl::Duration last_failure_ ABSL_GUARDED_BY(contact_mu_) = -absl::InfiniteDuration();
  std::string last_error_ ABSL_GUARDED_BY(contact_mu_);
  std::string refused_ ABSL_GUARDED_BY(contact_mu_);
  absl::Duration refused_since_ ABSL_GUARDED_BY(contact_mu_);
  std::atomic<size_t> current_{0};
  mutable absl::Mutex token_mu_;
  std::string token_ ABSL_GUARDED_BY(token_mu_);
};

}  // namespace holdfast
