#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "src/model/types.h"
#include "src/snapshot/resource.h"
#include "src/translate/object_index.h"
#include "src/translate/status.h"

namespace holdfast {

// A virtual service translated once for gateways and once for proxyless gRPC
// clients. Reused by the translator while `digest` (the service) and `epoch`
// (what its routes can depend on) hold.
struct ServiceOutput {
  std::string digest;
  std::string epoch;
  std::string gateway_vhost;         // encoded VirtualHost for gateway route configs
  std::string gateway_vhost_digest;  // ContentDigest(gateway_vhost), for their versions
  bool cors = false;
  bool uses_unroutable = false;  // some gRPC route points at kUnroutableCluster
  std::vector<std::pair<ObjectKey, FieldError>> warnings;  // replayed on reuse
  ResourcePtr grpc_routes;
  std::map<std::string, ResourcePtr> grpc_listeners;  // by domain
};

// Translated services by key.
using ServiceOutputs = std::map<ObjectKey, ServiceOutput>;

struct ServiceContext {
  const ObjectIndex* index;
  uint32_t missing_upstream_status;
  std::string epoch;
};

// Translates one virtual service, delegation expanded. Fails, naming the
// Envoy field, when Envoy (or a gRPC client) would refuse what it becomes:
// its virtual host is shared with every other service of a gateway, so
// serving it would make proxies refuse all of them.
absl::StatusOr<ServiceOutput> TranslateVirtualService(const GatewayObject& vs,
                                                      const ServiceContext& context);

// What translated routes can depend on besides their own object: the route
// tables (content) and which upstreams exist (not their endpoints).
std::string RoutingEpoch(const ObjectIndex& index);

}  // namespace holdfast
