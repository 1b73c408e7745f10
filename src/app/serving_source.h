#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"
#include "src/app/serve.h"
#include "src/common/clock.h"
#include "src/common/metrics.h"
#include "src/common/random.h"
#include "src/common/shared_document.h"
#include "src/snapshot/snapshot.h"
#include "src/source/config_source.h"

namespace holdfast {

// Where a replica's configuration comes from, with what the admin endpoint
// shows of it. One implementation per kind of source (gateway objects in a
// directory or in etcd, raw Envoy resources in a directory); the server
// owns one and knows nothing else of it.
class ServingSource {
 public:
  virtual ~ServingSource() = default;
  // The gateway-object source, or null when the source serves raw resources.
  virtual const ConfigSource* config_source() const = 0;
  // JSON for /debug/status: objects and their statuses, or what was rejected.
  virtual nlohmann::json StatusJson() const = 0;
  // More admin pages by path (/debug/leader, ...).
  virtual std::map<std::string, std::function<nlohmann::json()>> Pages() { return {}; }
  // Stops reading the store and every side effect (a leader resigns).
  virtual void Stop() = 0;
  // Where the replicas share their staged rollout's decisions (a document
  // in the store), or null when the source has no store to share.
  virtual SharedDocument* rollout_document() { return nullptr; }
  // This replica's name in what it shares ("" without a store).
  virtual std::string replica_id() const { return ""; }
  // Statuses laid over the objects' own (ConfigSource::SetStatusOverlay);
  // nothing for a source without gateway objects.
  virtual void SetStatusOverlay(StatusMap overlay) {}
};

// Builds and starts the source `options` name, publishing its snapshots
// through `publish`. Fails only on a configuration mistake (no source, two
// sources, a bad flag); an unreachable store or a missing directory is not
// an error: the source keeps trying.
absl::StatusOr<std::unique_ptr<ServingSource>> StartServingSource(
    const ServeOptions& options, const Clock& clock, Random& random, MetricsRegistry* metrics,
    std::function<void(SnapshotPtr)> publish);

}  // namespace holdfast
