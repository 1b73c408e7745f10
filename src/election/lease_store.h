#pragma once

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace holdfast {

// The spec of a coordination.k8s.io/v1 Lease, the fields client-go's leader
// election reads and writes, so `kubectl get lease` and tools that read
// client-go leases understand holdfast's.
struct LeaseRecord {
  std::string holder_identity;  // empty: nobody holds it
  int32_t lease_duration_seconds = 0;
  absl::Time acquire_time;  // MicroTime: kept to the microsecond
  absl::Time renew_time;
  int32_t lease_transitions = 0;  // grows by one when the holder changes
  std::string preferred_holder;   // set by an operator: the holder yields
  bool operator==(const LeaseRecord&) const = default;
};

// One Lease object with optimistic concurrency: what leader election on
// Kubernetes needs from the API server. Implemented over the Kubernetes API;
// tests use an in-memory fake. Every call may block; implementations bound it
// with a deadline well under the elector's renew deadline. Errors other than
// the codes below mean "store unreachable".
class LeaseStore {
 public:
  struct Versioned {
    LeaseRecord record;
    std::string resource_version;
  };
  virtual ~LeaseStore() = default;
  // NotFound when the Lease does not exist.
  virtual absl::StatusOr<Versioned> Get() = 0;
  // AlreadyExists when it does. Returns the new resourceVersion.
  virtual absl::StatusOr<std::string> Create(const LeaseRecord& record) = 0;
  // Replaces the record if `resource_version` is still current, else
  // Aborted (a conflict: someone else wrote it). Returns the new version. A
  // write that changes nothing may keep the version, so writers change
  // renew_time on every write.
  virtual absl::StatusOr<std::string> Update(const LeaseRecord& record,
                                             const std::string& resource_version) = 0;
};

}  // namespace holdfast
