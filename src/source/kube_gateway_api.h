#pragma once
// The Gateway API resources the Kubernetes source reflects, and the
// conversion's input made from what the reflectors hold
// (src/gateway_api/convert.h for what happens next).

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "src/gateway_api/input.h"
#include "src/kube/kube_api.h"
#include "src/kube/reflector.h"

namespace holdfast {

// gateway.networking.k8s.io: gatewayclasses (cluster-scoped), then the
// namespaced gateways, httproutes, grpcroutes (v1) and referencegrants
// (v1beta1, the version the standard channel serves).
KubeResource GatewayClassesResource();
std::vector<KubeResource> NamespacedGatewayApiResources();
// core/v1 namespaces (cluster-scoped): their labels, for allowedRoutes
// selectors.
KubeResource NamespacesResource();
// core/v1 Secrets of type kubernetes.io/tls only (a field selector): the
// certificates of HTTPS listeners.
KubeResource TlsSecretsResource();
// The API resource a Gateway API status is about (its kind, as in
// gateway_api::k*Kind), for a status writer; nullopt for other kinds.
std::optional<KubeResource> GatewayApiResourceOf(const std::string& status_kind);
// Every such resource, by status kind.
std::map<std::string, KubeResource> GatewayApiStatusResources();

// Objects by resource name ("gateways", ...), as reflected.
using KubeObjectsByResource = std::map<std::string, KubeObjects>;

// Routes parsed from their API objects, kept while an object is the same
// (a reflector shares an object until it changes), so that a change to one
// of 10,000 HTTPRoutes parses one. Not thread-safe.
class ParsedRoutes {
 public:
  std::shared_ptr<const gateway_api::Route> Parse(const std::shared_ptr<const KubeObject>& object,
                                                  bool grpc);
  // Forgets the routes not parsed since the last call.
  void ForgetUnused();

 private:
  struct Entry {
    std::shared_ptr<const KubeObject> object;  // keeps the key's address taken
    bool grpc = false;
    std::shared_ptr<const gateway_api::Route> route;
    bool used = true;
  };
  absl::flat_hash_map<const KubeObject*, Entry> entries_;
};

// `routes`: where routes parsed before are found; nullptr parses them all.
gateway_api::GatewayApiInput GatewayApiInputOf(const KubeObjectsByResource& objects,
                                               DiscoveredServices services,
                                               ParsedRoutes* routes = nullptr);

}  // namespace holdfast
