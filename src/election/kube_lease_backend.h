#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "absl/synchronization/mutex.h"
#include "src/common/clock.h"
#include "src/election/election_backend.h"
#include "src/election/lease_store.h"

namespace holdfast {

// Leader election on one Kubernetes Lease, behind the same ElectionBackend
// the etcd backend implements, so the same LeaseElector (and its safety
// argument and simulated-time tests) drives both.
//
// The two stores differ in shape: etcd keeps a key per candidate, ordered by
// creation; a Lease is one object replicas compare-and-swap. The mapping:
//   GrantLease      a local candidacy id; nothing is written.
//   CreateCandidate takes the Lease if it is free, expired or already ours
//                   (resourceVersion precondition); returns the term, or 0
//                   while another replica holds it (the elector tries again
//                   on its next step).
//   RenewLease      the holder writes a new renewTime (to the microsecond,
//                   so the write always changes the object); NotFound once
//                   another replica holds the Lease or an operator set a
//                   different preferredHolder (the holder yields). A replica
//                   that does not hold it has nothing to renew.
//   RevokeLease     the holder releases: empty holder, leaseDurationSeconds
//                   1, as client-go does.
//   FirstCandidate  the holder, unless the Lease is free or expired.
// The term (fencing token) is leaseTransitions + 1, so it is never 0 and
// changes whenever the holder does.
//
// Expiry follows client-go: a Lease has expired when this replica's own
// monotonic clock shows leaseDurationSeconds since it last saw the record
// change, never by comparing the holder's renewTime with local time. The
// holder stops leading renew_deadline after it sent its last successful
// renewal, which is before anyone saw that renewal, so before anyone can
// take the Lease (renew_deadline < lease_duration).
class KubeLeaseBackend : public ElectionBackend {
 public:
  // `store` and `clock` must outlive the backend.
  KubeLeaseBackend(std::string replica_id, LeaseStore* store, const Clock& clock)
      : replica_id_(std::move(replica_id)), store_(store), clock_(clock) {}

  absl::StatusOr<int64_t> GrantLease(absl::Duration ttl) override;
  absl::Status RenewLease(int64_t lease_id) override;
  absl::Status RevokeLease(int64_t lease_id) override;
  absl::StatusOr<int64_t> CreateCandidate(const std::string& key, const std::string& replica_id,
                                          int64_t lease_id) override;
  absl::StatusOr<std::optional<Candidate>> FirstCandidate(const std::string& prefix) override;

 private:
  // Reads the Lease and notes when its record last changed.
  absl::StatusOr<std::optional<LeaseStore::Versioned>> ObserveLocked()
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  bool ExpiredLocked(const LeaseRecord& record) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Writes `record` as the holder's, for candidacy `lease_id`; 0 on a lost race.
  absl::StatusOr<int64_t> TakeLocked(const std::optional<LeaseStore::Versioned>& current,
                                     int64_t lease_id) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const std::string replica_id_;
  LeaseStore* const store_;
  const Clock& clock_;

  absl::Mutex mu_;
  int32_t duration_seconds_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t next_lease_id_ ABSL_GUARDED_BY(mu_) = 1;
  int64_t holding_ ABSL_GUARDED_BY(mu_) = 0;  // candidacy that holds the Lease
  std::string holding_key_ ABSL_GUARDED_BY(mu_);
  std::string observed_version_ ABSL_GUARDED_BY(mu_);
  absl::Duration observed_at_ ABSL_GUARDED_BY(mu_);  // monotonic
};

}  // namespace holdfast
