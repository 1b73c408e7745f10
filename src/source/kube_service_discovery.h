#pragma once

#include <set>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
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
// Each object is read from its JSON once while it is the same object (the
// reflector's objects are immutable and shared); reading 5,000 Services and
// their slices on every change of anything was a cost of every change.
// Not thread-safe: one caller (the source's apply loop).
class KubeServiceDiscovery {
 public:
  DiscoveredServices Discover(const KubeObjects& services, const KubeObjects& slices);

  // How many objects were read from their JSON, since the start.
  uint64_t objects_read() const { return objects_read_; }

 private:
  // What the join reads of one EndpointSlice.
  struct Slice {
    struct Endpoint {
      std::string address;
      std::string zone;
      bool draining = false;
    };
    ServiceKey service;
    std::string address_type;
    std::vector<std::pair<std::string, uint32_t>> ports;  // name, port: TCP ones
    std::vector<Endpoint> endpoints;                      // used ones, per address
  };
  template <typename T>
  struct Read {
    std::shared_ptr<const KubeObject> source;
    T value;
    bool used = true;
  };
  template <typename T, typename Parse>
  const T& ReadOnce(absl::flat_hash_map<std::string, Read<T>>& read, const std::string& name,
                    const std::shared_ptr<const KubeObject>& object, Parse parse);

  absl::flat_hash_map<std::string, Read<DiscoveredService>> services_;
  absl::flat_hash_map<std::string, Read<Slice>> slices_;
  uint64_t objects_read_ = 0;
  // Slices ("NAMESPACE/NAME") already logged as skipped.
  std::set<std::string> skipped_logged_;
};

}  // namespace holdfast
