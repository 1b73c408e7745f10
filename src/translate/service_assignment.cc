#include "src/translate/service_assignment.h"

#include <map>
#include <vector>

namespace holdfast {

using envoy::config::endpoint::v3::ClusterLoadAssignment;

std::optional<ServiceKey> ServiceKeyOf(const GatewayObject& upstream) {
  const auto* spec = std::get_if<UpstreamSpec>(&*upstream.spec);
  if (spec == nullptr || !spec->service.has_value()) return std::nullopt;
  const ServiceRef& ref = *spec->service;
  return ServiceKey{ref.ns.empty() ? upstream.meta.ns : ref.ns, ref.name};
}

const DiscoveredServicePort* FindServicePort(const DiscoveredService& service,
                                             const ServiceRef& ref) {
  for (const DiscoveredServicePort& port : service.ports) {
    if (ref.port_name.empty() ? port.port == ref.port : port.name == ref.port_name) return &port;
  }
  return nullptr;
}

bool AppProtocolIsHttp2(const std::string& app_protocol) {
  return app_protocol == "kubernetes.io/h2c" || app_protocol == "grpc";
}

ClusterLoadAssignment ServiceLoadAssignment(const std::string& cluster,
                                            const DiscoveredServicePort* port) {
  ClusterLoadAssignment cla;
  cla.set_cluster_name(cluster);
  if (port == nullptr) return cla;
  std::map<std::string, std::vector<const ServiceEndpoint*>> by_zone;
  for (const ServiceEndpoint& endpoint : port->endpoints) {
    by_zone[endpoint.zone.empty() ? "default" : endpoint.zone].push_back(&endpoint);
  }
  for (const auto& [zone, endpoints] : by_zone) {
    auto* locality = cla.add_endpoints();
    locality->mutable_locality()->set_zone(zone);
    locality->mutable_load_balancing_weight()->set_value(endpoints.size());
    for (const ServiceEndpoint* endpoint : endpoints) {
      auto* lb_endpoint = locality->add_lb_endpoints();
      auto* socket = lb_endpoint->mutable_endpoint()->mutable_address()->mutable_socket_address();
      socket->set_address(endpoint->address);
      socket->set_port_value(endpoint->port);
      lb_endpoint->mutable_load_balancing_weight()->set_value(1);
      if (endpoint->draining) {
        lb_endpoint->set_health_status(envoy::config::core::v3::DRAINING);
      }
    }
  }
  return cla;
}

}  // namespace holdfast
