#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "src/app/serve.h"
#include "src/app/serving_source.h"
#include "src/election/kube_lease_backend.h"
#include "src/election/kube_lease_store.h"
#include "src/election/lease_elector.h"
#include "src/kube/kube_client.h"
#include "src/kube/kube_shared_document.h"
#include "src/source/kube_config_source.h"
#include "src/status/kube_status_writer.h"

namespace holdfast {

// Gateway objects from the Kubernetes API (--kubeconfig, --in-cluster), and
// leader election on a coordination.k8s.io/v1 Lease. Every replica reads and
// serves; leadership only says which replica writes object statuses to the
// API server (KubeStatusWriter, fenced by deploy/status-fencing.yaml), so it
// never affects readiness or serving. A replica that loses leadership steps
// down, keeps serving and campaigns again, forever.
class KubeServingSource : public ServingSource {
 public:
  static absl::StatusOr<std::unique_ptr<KubeServingSource>> Start(
      const ServeOptions& options, const Clock& clock, Random& random, MetricsRegistry* metrics,
      std::function<void(SnapshotPtr)> publish);

  const ConfigSource* config_source() const override { return source_.get(); }
  nlohmann::json StatusJson() const override;
  std::map<std::string, std::function<nlohmann::json()>> Pages() override;
  // Stops reading, then resigns: the Lease is released for another replica.
  void Stop() override;
  // The ConfigMap holdfast-rollout in the Lease's namespace.
  SharedDocument* rollout_document() override { return rollout_document_.get(); }
  std::string replica_id() const override { return replica_id_; }
  void SetStatusOverlay(StatusMap overlay) override {
    source_->SetStatusOverlay(std::move(overlay));
  }

 private:
  KubeServingSource() = default;

  std::string lease_;  // "NAMESPACE/NAME", for the page and logs
  std::unique_ptr<KubeClient> client_;
  // Election calls go through a client of their own, whose deadlines are a
  // fraction of the renew deadline (the source's lists may take longer).
  std::unique_ptr<KubeClient> election_client_;
  std::unique_ptr<KubeLeaseStore> lease_store_;
  std::unique_ptr<KubeLeaseBackend> backend_;
  std::unique_ptr<LeaseElector> elector_;
  std::unique_ptr<KubeStatusWriter> writer_;
  std::unique_ptr<KubeConfigSource> source_;
  std::unique_ptr<KubeSharedDocument> rollout_document_;
  std::string replica_id_;
};

// Where the Lease is: --lease-namespace (default: the pod's namespace with
// --in-cluster, else holdfast-system) and --lease-name, checked.
struct LeaseLocation {
  std::string ns;
  std::string name;
};
absl::StatusOr<LeaseLocation> LeaseLocationFromFlags(const ServeOptions& options,
                                                     const KubeConfig& config);

// The election client's timeouts: each call within a quarter of the renew
// deadline, so a step (a read and a write) leaves half of it to retry.
KubeClient::Options ElectionClientOptions(absl::Duration renew_deadline);

}  // namespace holdfast
