#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "nlohmann/json.hpp"
#include "src/common/clock.h"
#include "src/common/metrics.h"
#include "src/status/status_counters.h"
#include "src/common/poller.h"
#include "src/common/random.h"
#include "src/election/lease_elector.h"
#include "src/election/lease_store.h"
#include "src/gateway_api/conditions.h"
#include "src/kube/kube_api.h"
#include "src/kube/observed_object.h"
#include "src/translate/status.h"

namespace holdfast {

// The status subresource of a holdfast.dev object for `status` of the
// version `observed`, without writer and lastTransitionTime: what is compared
// to decide whether a stored status needs rewriting (docs/kubernetes.md).
nlohmann::json KubeStatusContent(const ObjectKey& key, const ObjectStatus& status,
                                 const ObservedObject& observed);

// Writes object statuses to the status subresource of holdfast.dev objects
// while this replica leads on its Lease, and only then.
//
// Every status names its writer: the replica id and term (the Lease's
// leaseTransitions + 1). The writer checks leadership before each write, but
// what fences a paused ex-leader that resumes is the API server: the
// ValidatingAdmissionPolicy of deploy/status-fencing.yaml refuses a status
// whose writer is not the Lease's current holder and term. A refused write
// (403, or 422 when the policy finds no Lease) is told from a refusal for
// another reason (RBAC, a policy bound to another Lease, a schema error) by
// reading the Lease: if the term has ended (or the Lease is gone) it is
// counted as fenced and reported to the elector, which steps down;
// otherwise it is an error, retried with backoff.
//
// Writes are PUTs conditioned on the resourceVersion just read (409: read
// again). A status equal to the stored one (writer and transition times
// aside) is not written. On gaining a term every object's stored status is
// read once and rewritten where it differs, so a new leader converges every
// status, observedGeneration included; within a term only changed statuses
// are written. Statuses of objects that are not API objects of `resources`,
// or that were deleted, are skipped.
//
// Gateway API statuses (UpdateGatewayApi) are written the same way, leader
// only, in the API's own shape (gateway_api::GatewayApiStatusJson); that
// shape has no room for a writer, so the API server cannot fence them: only
// the leadership check before each write does. A status about an older
// generation than the object's is left for the next translation.
class KubeStatusWriter {
 public:
  struct Options {
    std::string replica_id;
    std::vector<KubeResource> resources;  // kinds whose statuses are written
    // GatewayClass, Gateway and routes, by the kind their statuses name.
    std::map<std::string, KubeResource> gateway_api_resources;
    // A pass that failed is retried after a jittered exponential backoff.
    absl::Duration min_backoff = absl::Milliseconds(200);
    absl::Duration max_backoff = absl::Seconds(5);
    // A conflicting write is read and tried again up to this many times.
    int max_conflicts = 3;
  };

  // `api`, `elector`, `lease` (the elector's Lease, read to tell fencing
  // from other refusals), `clock`, `random` and `metrics` must outlive the
  // writer.
  KubeStatusWriter(Options options, KubeApi* api, LeaseElector* elector, LeaseStore* lease,
                   const Clock& clock, Random& random, MetricsRegistry* metrics);
  ~KubeStatusWriter() { Stop(); }

  // The statuses to publish (the latest translation's) and the object
  // versions they are about. Thread-safe; wakes the writer.
  void Update(const StatusMap& statuses, const ObservedObjects& observed);
  // The Gateway API statuses to publish. Thread-safe; wakes the writer.
  void UpdateGatewayApi(const gateway_api::GatewayApiStatuses& statuses);
  // Runs Sync() after every Update() and leadership change, on a Poller.
  void Start();
  void Stop() { poller_.Stop(); }

  // One pass: if leading, brings every status in line. FailedPrecondition
  // when the API server refused a write because the term had ended.
  absl::Status Sync();

 private:
  struct Desired {
    const KubeResource* resource;
    ObservedObject observed;
    nlohmann::json content;
  };
  std::map<ObjectKey, Desired> DesiredStatuses();
  // Writes one status unless the stored one already says the same.
  absl::Status WriteOne(const Leadership& leadership, const ObjectKey& key,
                        const Desired& desired) ABSL_EXCLUSIVE_LOCKS_REQUIRED(sync_mu_);
  // Writes the Gateway API statuses that differ from what is known stored.
  absl::Status SyncGatewayApi(const Leadership& leadership)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(sync_mu_);
  absl::Status WriteGatewayApiOne(const Leadership& leadership, const KubeResource& resource,
                                  const gateway_api::GatewayApiStatuses::Shared& status)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(sync_mu_);
  // The status to store for one object as read: the stored status itself
  // when it already says what is wanted, nullopt when this write is not for
  // it (another object of that name, another generation).
  using RenderStatus =
      std::function<std::optional<nlohmann::json>(const nlohmann::json& stored)>;
  // Reads the object, renders its status and PUTs it if it changed,
  // conditioned on the version read (a conflict reads again, up to
  // max_conflicts times). The status now stored, or nullopt when the object
  // is gone or the render declined; FailedPrecondition when fenced.
  absl::StatusOr<std::optional<nlohmann::json>> PutStatus(const Leadership& leadership,
                                                          const KubeResource& resource,
                                                          const ObjectKey& key,
                                                          const RenderStatus& render)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(sync_mu_);
  // `content` as a status to write over `stored`: transition times and the
  // writer (this replica, `leadership`'s term) added.
  nlohmann::json StatusToWrite(const Leadership& leadership, const nlohmann::json& stored,
                               const nlohmann::json& content) const;
  // After a 403: FailedPrecondition (and the elector told) if the Lease
  // shows the term has ended, else `refused` itself.
  absl::Status FencedOr(const Leadership& leadership, absl::Status refused)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(sync_mu_);

  const Options options_;
  KubeApi* api_;
  LeaseElector* elector_;
  LeaseStore* lease_;
  const Clock& clock_;
  Random& random_;
  StatusCounters counters_;
  Poller poller_;

  absl::Mutex mu_;
  StatusMap statuses_ ABSL_GUARDED_BY(mu_);
  ObservedObjects observed_ ABSL_GUARDED_BY(mu_);
  gateway_api::GatewayApiStatuses gateway_api_ ABSL_GUARDED_BY(mu_);

  // Sync() only, one caller at a time.
  absl::Mutex sync_mu_;
  int64_t term_ ABSL_GUARDED_BY(sync_mu_) = 0;  // 0: nothing known for any term
  // What this term found stored or wrote: uid and content text, by object.
  std::map<ObjectKey, std::pair<std::string, std::string>> known_ ABSL_GUARDED_BY(sync_mu_);
  // Gateway API objects: their status as this term last read or wrote it,
  // and the status found to render to it. Statuses are shared objects a
  // conversion keeps while they are the same: the one found before is not
  // rendered again (10,000 HTTPRoutes' statuses rendered cost ~50 ms a pass).
  struct KnownGatewayApi {
    nlohmann::json stored;
    gateway_api::GatewayApiStatuses::Shared renders_to;
  };
  std::map<ObjectKey, KnownGatewayApi> known_gateway_api_ ABSL_GUARDED_BY(sync_mu_);
};

}  // namespace holdfast
