#pragma once

#include <memory>
#include <optional>

#include "absl/status/statusor.h"
#include "src/admin/admin_server.h"
#include "src/admin/event_log.h"
#include "src/admission/webhook_server.h"
#include "src/app/replica_events.h"
#include "src/app/serve.h"
#include "src/app/serving_source.h"
#include "src/common/memory_trimmer.h"
#include "src/common/metrics.h"
#include "src/rollout/held_objects.h"
#include "src/rollout/rollout_manager.h"
#include "src/snapshot/last_known_good.h"
#include "src/snapshot/snapshot_cache.h"
#include "src/xds/xds_server.h"

namespace holdfast {

// One replica of the control plane. It owns its parts and builds them in the
// order data flows: the snapshot cache and its persisted copy, the source
// that fills them, the xDS server that reads them, then the admin endpoint
// that shows them all. Stop() takes them down in reverse.
class Server {
 public:
  // Builds and starts every part. Fails on a configuration mistake or when
  // a port cannot be bound; never because a store is unreachable.
  static absl::StatusOr<std::unique_ptr<Server>> Start(const ServeOptions& options);
  ~Server() { Stop(); }

  // The ports actually bound (useful with port 0).
  int xds_port() const { return xds_->port(); }
  int admin_port() const { return admin_->port(); }
  int webhook_port() const { return webhook_ ? webhook_->port() : 0; }

  // Stops reading the store (a leader resigns), then ends xDS streams after
  // a second's grace. Idempotent.
  void Stop();

 private:
  explicit Server(const ServeOptions& options);
  // The parts in order; each step fails only on a configuration mistake.
  absl::Status StartParts();
  absl::Status ParseGrouping();
  // The last-known-good copy, the config source and the rollouts between
  // them and the proxies.
  absl::Status StartSource(absl::Duration grace, const RolloutPolicies& rollout);
  void StartRollouts(const RolloutPolicies& flags);
  absl::StatusOr<XdsServerOptions> XdsOptions();  // from the --xds-* flags
  absl::Status StartXds();
  absl::Status StartAdmin();  // and the metrics collector it serves
  absl::Status StartWebhook();
  void StartHousekeeping();  // replica events, memory trimming
  AdminSources MakeAdminSources();
  // What /debug/replica shows: version, uptime, source, identifiers.
  nlohmann::json ReplicaJson() const;
  // What the event log compares, once a second.
  ReplicaObservation Observe() const;

  const ServeOptions options_;
  const Clock& clock_;
  Random& random_;  // jitters the elector's and the status writer's retries
  const absl::Time started_;
  MetricsRegistry metrics_;
  EventLog events_{clock_};
  SnapshotCache cache_;   // what proxies are served
  SnapshotCache staged_;  // what the source published, before the rollouts
  CanaryRouter canaries_;
  ProxyRegistry proxies_;
  XdsStats stats_;
  EncodedBodyCache bodies_;
  ViewCache views_;
  std::optional<NodeGrouper> grouper_;            // set first thing in StartParts
  std::optional<ClientIdentityPolicy> identity_;  // likewise
  std::unique_ptr<LastKnownGood> last_good_;
  // The staged rollouts (the --rollout-* flags and RolloutPolicy objects),
  // and the held statuses of every rollout.
  std::unique_ptr<HeldStatusUnion> held_;
  std::unique_ptr<RolloutManager> rollouts_;
  std::unique_ptr<ServingSource> source_;
  std::unique_ptr<XdsServer> xds_;
  int collector_ = -1;
  std::unique_ptr<AdminServer> admin_;
  std::unique_ptr<WebhookServer> webhook_;  // only with --webhook-listen
  std::unique_ptr<MemoryTrimmer> trimmer_;
  std::function<nlohmann::json()> leader_page_;  // /debug/leader, with an election
  std::unique_ptr<ReplicaEventWatch> event_watch_;
  bool stopped_ = false;
};

}  // namespace holdfast
