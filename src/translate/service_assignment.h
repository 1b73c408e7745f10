#pragma once

#include <optional>
#include <string>

#include "envoy/config/endpoint/v3/endpoint.pb.h"
#include "src/model/service.h"
#include "src/model/types.h"

namespace holdfast {

// The Service an Upstream names (in the Upstream's namespace unless the
// reference says another); nullopt for an Upstream of hosts.
std::optional<ServiceKey> ServiceKeyOf(const GatewayObject& upstream);

// The port of `service` that `ref` names, by number or by name; nullptr when
// it has none.
const DiscoveredServicePort* FindServicePort(const DiscoveredService& service,
                                             const ServiceRef& ref);

// Whether a Service port's appProtocol means HTTP/2 in clear text.
bool AppProtocolIsHttp2(const std::string& app_protocol);

// The endpoints of a Service port as the load assignment of `cluster`: one
// locality per zone ("default" when the slice names none: gRPC clients need
// a locality identity), weighted by its number of endpoints so that traffic
// spreads per endpoint, not per zone; draining endpoints marked DRAINING.
// `port` nullptr: no endpoints (requests get 503).
envoy::config::endpoint::v3::ClusterLoadAssignment ServiceLoadAssignment(
    const std::string& cluster, const DiscoveredServicePort* port);

}  // namespace holdfast
