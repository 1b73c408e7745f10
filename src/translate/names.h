#pragma once
// Names of the Envoy resources translated from gateway objects. Stable, so
// that proxies keep their resources across restarts and replicas.

#include <string>

#include "absl/strings/str_cat.h"
#include "src/model/object.h"

namespace holdfast::names {

inline std::string Cluster(const std::string& ns, const std::string& upstream) {
  return absl::StrCat(ns, "/", upstream);
}
inline std::string GatewayListener(const ObjectKey& gateway) {
  return absl::StrCat("gateway/", gateway.ns, "/", gateway.name);
}
inline std::string GatewayRoutes(const ObjectKey& gateway) {
  return absl::StrCat("gateway/", gateway.ns, "/", gateway.name);
}
// Route configuration for proxyless gRPC clients of one virtual service;
// its API listeners are named by the service's domains.
inline std::string GrpcRoutes(const ObjectKey& virtual_service) {
  return absl::StrCat("grpc/", virtual_service.ns, "/", virtual_service.name);
}

}  // namespace holdfast::names
