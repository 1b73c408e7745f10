#pragma once

#include "src/election/election_backend.h"
#include "src/etcd/etcd_client.h"

namespace holdfast {

// The candidate keys of the etcd election, on any KeyValueStore (a real
// cluster, or the in-memory fake in tests): creates `key` bound to
// `lease_id` if absent and returns its create revision (the existing key's
// when present), and the candidate with the lowest create revision.
absl::StatusOr<int64_t> CreateCandidateKey(KeyValueStore& store, const std::string& key,
                                           const std::string& replica_id, int64_t lease_id);
absl::StatusOr<std::optional<Candidate>> FirstCandidateKey(KeyValueStore& store,
                                                           const std::string& prefix);

// ElectionBackend on etcd: leases are etcd leases, candidates are keys
// bound to them, created in a transaction that only writes an absent key.
class EtcdElectionBackend : public ElectionBackend {
 public:
  explicit EtcdElectionBackend(EtcdClient* client) : client_(client) {}

  absl::StatusOr<int64_t> GrantLease(absl::Duration ttl) override;
  absl::Status RenewLease(int64_t lease_id) override;
  absl::Status RevokeLease(int64_t lease_id) override;
  absl::StatusOr<int64_t> CreateCandidate(const std::string& key, const std::string& replica_id,
                                          int64_t lease_id) override;
  absl::StatusOr<std::optional<Candidate>> FirstCandidate(const std::string& prefix) override;

 private:
  EtcdClient* client_;
};

}  // namespace holdfast
