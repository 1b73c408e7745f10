#pragma once

#include <string>

#include "nlohmann/json.hpp"
#include "src/admin/admin_server.h"
#include "src/common/clock.h"
#include "src/snapshot/last_known_good.h"
#include "src/snapshot/snapshot_cache.h"
#include "src/source/config_source.h"

namespace holdfast {

// Ready means: a complete snapshot is being served (live, or persisted while
// the store is away). The reason says which snapshot, and what is wrong with
// the store or with persistence, so an operator reading /readyz sees it.
// `source` may be null (raw resources have no store).
Readiness ComputeReadiness(const SnapshotCache& cache, const ConfigSource* source,
                           const LastKnownGood::State& last_good, const Clock& clock);

// /debug/store: the store's health and what the replica serves.
nlohmann::json StoreJson(const SourceHealth& health, const LastKnownGood::State& last_good,
                         const Clock& clock);

}  // namespace holdfast
