#pragma once

#include <set>
#include <string>
#include <vector>

#include "src/kube/kube_api.h"
#include "src/kube/reflector.h"
#include "src/model/service.h"

namespace holdfast {

// core/v1 Services and discovery.k8s.io/v1 EndpointSlices, the API
// resources the Kubernetes source reads to resolve Upstreams that name a
// Service.
KubeResource ServicesResource();
KubeResource EndpointSlicesResource();

// Joins Services and their EndpointSlices into what the translator needs
// (docs/kubernetes.md, "Services"):
//   - a slice belongs to the Service its `kubernetes.io/service-name` label
//     names, in its own namespace; slices of no known Service are ignored;
//   - a slice port feeds the Service port of the same name (both may be
//     empty on a single-port Service); TCP ports only;
//   - an endpoint is used when ready (absent: ready); else, when serving
//     (absent: serving) and terminating, it is draining; else left out;
//   - IPv4 and IPv6 slices only: FQDN slices are skipped (logged once each);
//   - an address and port in several slices counts once (ready wins over
//     draining); endpoints are sorted, so the order slices list them in
//     never changes what is served.
// Not thread-safe: one caller (the source's apply loop).
class KubeServiceDiscovery {
 public:
  DiscoveredServices Discover(const KubeObjects& services, const KubeObjects& slices);

 private:
  // Slices ("NAMESPACE/NAME") already logged as skipped.
  std::set<std::string> skipped_logged_;
};

}  // namespace holdfast
