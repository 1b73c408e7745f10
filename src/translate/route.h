#pragma once

#include <functional>
#include <string>

#include "envoy/config/route/v3/route_components.pb.h"
#include "src/model/types.h"
#include "src/translate/status.h"

namespace holdfast {

struct RouteTarget {
  // Cluster name for an upstream reference, or empty if it does not exist.
  std::function<std::string(const ObjectRef&)> resolve_upstream;
  // Status code answered by routes whose upstream does not exist.
  uint32_t missing_upstream_status = 503;
  // Proxyless gRPC clients: leave out what they reject (per-filter CORS).
  bool for_grpc = false;
};

// Translates one non-delegating route. Problems that do not stop the route
// from being served (a missing upstream) are warnings on `status`.
envoy::config::route::v3::Route TranslateRoute(const Route& route, const std::string& ns,
                                               const RouteTarget& target, ObjectStatus* status);

// The cluster that gRPC routes without an upstream (missing upstream,
// redirects, direct responses) point at: it exists and has no endpoints, so
// those RPCs fail UNAVAILABLE at once. (A missing cluster would instead make
// clients wait out their does-not-exist timer, and some hold every RPC of
// the service meanwhile.)
extern const char kUnroutableCluster[];

// Whether any route option needs the CORS HTTP filter.
bool UsesCors(const Route& route);

}  // namespace holdfast
