#pragma once

#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "nlohmann/json.hpp"
#include "src/election/lease_store.h"
#include "src/kube/kube_api.h"

namespace holdfast {

// coordination.k8s.io/v1 Leases.
extern const KubeResource kKubeLeases;

// A Lease's spec as client-go writes it (holderIdentity, leaseDurationSeconds,
// acquireTime, renewTime, leaseTransitions, preferredHolder), merged into
// `spec` so fields holdfast does not know are kept. Times are MicroTime:
// "%Y-%m-%dT%H:%M:%E6SZ"; an unset time (absl::Time{}) is left out.
nlohmann::json LeaseSpecJson(const LeaseRecord& record, nlohmann::json spec = {});

// Reads a Lease's spec leniently: absent or mistyped fields read as unset,
// times in any RFC 3339 form. Nothing in the elector's safety rests on the
// times (expiry is judged by the reader's own clock), so a time that does
// not parse reads as unset rather than failing the election.
LeaseRecord LeaseRecordFromJson(const nlohmann::json& spec);

// LeaseStore over the Kubernetes API: one Lease, `ns`/`name`. Each call is
// one request of `api`, whose own deadline bounds it: give it a client whose
// request timeout is well under the elector's renew deadline (serve uses a
// quarter of it). Keeps the last object it read, so an Update replaces the
// spec fields above and keeps the Lease's labels, annotations and other
// fields. Thread-safe.
class KubeLeaseStore : public LeaseStore {
 public:
  // `api` must outlive the store.
  KubeLeaseStore(KubeApi* api, std::string ns, std::string name)
      : api_(api), ns_(std::move(ns)), name_(std::move(name)) {}

  absl::StatusOr<Versioned> Get() override;
  absl::StatusOr<std::string> Create(const LeaseRecord& record) override;
  absl::StatusOr<std::string> Update(const LeaseRecord& record,
                                     const std::string& resource_version) override;

 private:
  // Remembers `object` as the last one seen and returns its resourceVersion.
  absl::StatusOr<std::string> Remember(nlohmann::json object);

  KubeApi* const api_;
  const std::string ns_;
  const std::string name_;
  absl::Mutex mu_;
  nlohmann::json last_ ABSL_GUARDED_BY(mu_);
};

}  // namespace holdfast
