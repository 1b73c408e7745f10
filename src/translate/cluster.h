#pragma once

#include <vector>

#include "src/model/types.h"
#include "src/snapshot/resource.h"
#include "src/translate/status.h"

namespace holdfast {

// Translates an Upstream into its Cluster and, when every host is an IP
// address, its ClusterLoadAssignment (an EDS cluster, usable by Envoy and by
// proxyless gRPC clients). Hosts given by name make a STRICT_DNS cluster,
// which proxyless gRPC clients cannot use (the status warns). An Upstream
// naming a Service is an EDS cluster with the endpoints `services` holds for
// that Service port; the Cluster itself depends on the Service port's
// appProtocol, never on its endpoints, so an endpoint change re-sends only
// the load assignment. A Service or port not in `services` is a Warning and
// an empty assignment.
std::vector<ResourcePtr> TranslateUpstream(const GatewayObject& upstream, ObjectStatus* status,
                                           const DiscoveredServices& services = {});

}  // namespace holdfast
