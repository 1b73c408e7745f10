#pragma once
// Everything the Gateway API conversion reads, as plain values: the
// Gateway API objects, the labels of namespaces (allowedRoutes selectors),
// TLS Secrets and the Services discovered for backendRefs.

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "src/gateway_api/objects.h"
#include "src/model/service.h"

namespace holdfast::gateway_api {

// A Secret of type kubernetes.io/tls.
struct TlsSecret {
  std::string certificate;  // tls.crt, PEM
  std::string private_key;  // tls.key, PEM
  bool operator==(const TlsSecret&) const = default;
};

struct GatewayApiInput {
  std::vector<GatewayClass> classes;
  std::vector<Gateway> gateways;
  // HTTPRoutes and GRPCRoutes, shared: a reader keeps them parsed while
  // their objects are the same.
  std::vector<std::shared_ptr<const Route>> routes;
  std::vector<ReferenceGrant> grants;
  std::map<std::string, std::map<std::string, std::string>> namespace_labels;
  std::map<ServiceKey, TlsSecret> secrets;  // by namespace and name
  DiscoveredServices services;
};

}  // namespace holdfast::gateway_api
