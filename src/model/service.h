#pragma once
// Kubernetes Services as upstreams: what an Upstream (or a Gateway API
// backendRef) names, and what the Kubernetes source discovers for it from
// the Service and its EndpointSlices. The translator resolves one into the
// other; no other source fills `TranslationInput::services`, so elsewhere a
// service reference resolves to nothing (a Warning, no endpoints).

#include <compare>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace holdfast {

// A port of a Service, by number (`port`) or by name (`port_name`): exactly
// one is set.
struct ServiceRef {
  std::string name;
  std::string ns;  // empty: the referring object's namespace
  uint32_t port = 0;
  std::string port_name;
  bool operator==(const ServiceRef&) const = default;
};

struct ServiceKey {
  std::string ns;
  std::string name;
  auto operator<=>(const ServiceKey&) const = default;
};

// One endpoint of a Service port, from an EndpointSlice.
struct ServiceEndpoint {
  std::string address;
  uint32_t port = 0;  // the target port on the endpoint
  std::string zone;   // topology zone; empty when the slice does not say
  // Ready endpoints take traffic; serving but terminating ones are sent to
  // proxies as draining; endpoints not serving are left out.
  bool draining = false;
  bool operator==(const ServiceEndpoint&) const = default;
};

struct DiscoveredServicePort {
  std::string name;  // may be empty on a single-port Service
  uint32_t port = 0;
  std::string app_protocol;  // e.g. "kubernetes.io/h2c", "grpc"
  std::vector<ServiceEndpoint> endpoints;
  bool operator==(const DiscoveredServicePort&) const = default;
};

// A Service as discovered: its ports with their endpoints.
struct DiscoveredService {
  std::vector<DiscoveredServicePort> ports;
  bool operator==(const DiscoveredService&) const = default;
};

using DiscoveredServices = std::map<ServiceKey, DiscoveredService>;

}  // namespace holdfast
