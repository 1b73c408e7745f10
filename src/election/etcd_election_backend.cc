#include "src/election/etcd_election_backend.h"

#include "absl/strings/str_cat.h"

namespace holdfast {

absl::StatusOr<int64_t> EtcdElectionBackend::GrantLease(absl::Duration ttl) {
  // EtcdClient rounds the TTL up to whole seconds.
  return client_->LeaseGrant(ttl);
}

absl::Status EtcdElectionBackend::RenewLease(int64_t lease_id) {
  return client_->LeaseKeepAlive(lease_id);
}

absl::Status EtcdElectionBackend::RevokeLease(int64_t lease_id) {
  return client_->LeaseRevoke(lease_id);
}

absl::StatusOr<int64_t> CreateCandidateKey(KeyValueStore& store, const std::string& key,
                                           const std::string& replica_id, int64_t lease_id) {
  etcdserverpb::TxnRequest txn;
  etcdserverpb::Compare* absent = txn.add_compare();
  absent->set_key(key);
  absent->set_target(etcdserverpb::Compare::CREATE);
  absent->set_result(etcdserverpb::Compare::EQUAL);
  absent->set_create_revision(0);
  etcdserverpb::PutRequest* put = txn.add_success()->mutable_request_put();
  put->set_key(key);
  put->set_value(replica_id);
  put->set_lease(lease_id);
  txn.add_failure()->mutable_request_range()->set_key(key);
  absl::StatusOr<etcdserverpb::TxnResponse> response = store.Txn(txn);
  if (!response.ok()) return response.status();
  if (response->succeeded()) return response->header().revision();
  const etcdserverpb::RangeResponse& existing = response->responses(0).response_range();
  if (existing.kvs().empty()) {
    return absl::UnavailableError(absl::StrCat("election key ", key, " vanished while created"));
  }
  return existing.kvs(0).create_revision();
}

absl::StatusOr<std::optional<Candidate>> FirstCandidateKey(KeyValueStore& store,
                                                           const std::string& prefix) {
  etcdserverpb::TxnRequest txn;  // a plain range, sorted; Txn keeps one code path
  etcdserverpb::RangeRequest* range = txn.add_success()->mutable_request_range();
  range->set_key(prefix);
  range->set_range_end(PrefixRangeEnd(prefix));
  range->set_sort_target(etcdserverpb::RangeRequest::CREATE);
  range->set_sort_order(etcdserverpb::RangeRequest::ASCEND);
  range->set_limit(1);
  absl::StatusOr<etcdserverpb::TxnResponse> response = store.Txn(txn);
  if (!response.ok()) return response.status();
  const etcdserverpb::RangeResponse& first = response->responses(0).response_range();
  if (first.kvs().empty()) return std::nullopt;
  const mvccpb::KeyValue& kv = first.kvs(0);
  return Candidate{.key = kv.key(),
                   .replica_id = kv.value(),
                   .create_revision = kv.create_revision(),
                   .lease_id = kv.lease()};
}

absl::StatusOr<int64_t> EtcdElectionBackend::CreateCandidate(const std::string& key,
                                                             const std::string& replica_id,
                                                             int64_t lease_id) {
  return CreateCandidateKey(*client_, key, replica_id, lease_id);
}

absl::StatusOr<std::optional<Candidate>> EtcdElectionBackend::FirstCandidate(
    const std::string& prefix) {
  return FirstCandidateKey(*client_, prefix);
}

}  // namespace holdfast
