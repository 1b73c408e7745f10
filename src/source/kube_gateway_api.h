#pragma once
// The Gateway API resources the Kubernetes source reflects, and the
// conversion's input made from what the reflectors hold
// (src/gateway_api/convert.h for what happens next).

#include <map>
#include <string>
#include <vector>

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

gateway_api::GatewayApiInput GatewayApiInputOf(const KubeObjectsByResource& objects,
                                               DiscoveredServices services);

}  // namespace holdfast
