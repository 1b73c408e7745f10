#pragma once

#include <vector>

#include "src/model/types.h"
#include "src/snapshot/resource.h"
#include "src/translate/status.h"

namespace holdfast {

// Translates an Upstream into its Cluster and, when every host is an IP
// address, its ClusterLoadAssignment (an EDS cluster, usable by Envoy and by
// proxyless gRPC clients). Hosts given by name make a STRICT_DNS cluster,
// which proxyless gRPC clients cannot use (the status warns).
std::vector<ResourcePtr> TranslateUpstream(const GatewayObject& upstream, ObjectStatus* status);

}  // namespace holdfast
