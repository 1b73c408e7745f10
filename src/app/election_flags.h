#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"
#include "src/app/serve.h"
#include "src/election/lease_elector.h"

namespace holdfast {

// The host name: a replica's default id (in a pod, the pod's name).
std::string HostName();

// serve's election flags (--replica-id, --lease-duration, --renew-deadline,
// --retry-period), parsed and checked by LeaseElector::Validate, for
// election keys under `prefix`.
absl::StatusOr<LeaseElector::Options> ElectionOptionsFromFlags(const ServeOptions& options,
                                                               std::string prefix);

// client-go's rule on top of Validate's: renew deadline > 1.2 x retry
// period, so a renewal jittered late by up to 20% still falls before the
// deadline. Lease election on Kubernetes enforces it, as client-go does.
absl::Status CheckClientGoTimings(const LeaseElector::Options& options);

// The /debug/leader page.
nlohmann::json LeaderToJson(const Leadership& leadership);

}  // namespace holdfast
