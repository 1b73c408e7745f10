#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace holdfast {

// One campaigning replica: its election key, the key's value, the store
// revision at which the key was created (the term it leads with, if it leads)
// and the lease the key is bound to.
struct Candidate {
  std::string key;
  std::string replica_id;
  int64_t create_revision = 0;
  int64_t lease_id = 0;
};

// The store operations leader election needs: leases, and keys bound to them
// that vanish when the lease does. Implemented on etcd; tests use a fake.
//
// Every call may block, but implementations should bound each call with a
// deadline well under the elector's renew deadline: the elector stays safe
// while a call hangs (it re-checks its deadline at read time), but it cannot
// renew or re-campaign until the call returns. Errors other than the NotFound
// of RenewLease are treated as "store unreachable": the elector keeps its
// state and lets its renew deadline decide. Thread-compatible use suffices:
// one elector makes one call at a time.
class ElectionBackend {
 public:
  virtual ~ElectionBackend() = default;
  // Grants a lease that expires `ttl` after its last renewal unless renewed.
  // The store must not grant less than `ttl` (round up, never down): the
  // elector's safety rests on the lease outliving its renew deadline.
  virtual absl::StatusOr<int64_t> GrantLease(absl::Duration ttl) = 0;
  // Renews a lease. NotFound when it has expired or was revoked.
  virtual absl::Status RenewLease(int64_t lease_id) = 0;
  // Revokes a lease, deleting the keys bound to it. Revoking a lease that no
  // longer exists may return NotFound; the elector ignores the result.
  virtual absl::Status RevokeLease(int64_t lease_id) = 0;
  // Creates `key` bound to `lease_id` with value `replica_id` unless it exists;
  // returns the key's create revision either way.
  virtual absl::StatusOr<int64_t> CreateCandidate(const std::string& key,
                                                  const std::string& replica_id,
                                                  int64_t lease_id) = 0;
  // The candidate with the lowest create revision under `prefix`, if any.
  virtual absl::StatusOr<std::optional<Candidate>> FirstCandidate(const std::string& prefix) = 0;
};

}  // namespace holdfast
