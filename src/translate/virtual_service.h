#pragma once

#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "src/model/types.h"
#include "src/snapshot/resource.h"
#include "src/translate/object_index.h"
#include "src/translate/status.h"

namespace holdfast {

// What a translated service's routes depend on besides the service itself.
struct ServiceDependencies {
  // UpstreamRefHash of every upstream its routes, and the tables they
  // delegate to, named (found or not), sorted: the translation is stale when
  // one of them appears or disappears. Upstream content never matters here.
  std::vector<size_t> upstreams;
  // The route tables' epoch it was translated against, if it delegates.
  std::optional<std::string> route_tables;
};

// A virtual service translated once for gateways and once for proxyless gRPC
// clients. Reused by the translator while `digest` (the service) and its
// dependencies hold.
struct ServiceOutput {
  std::string digest;
  ServiceDependencies depends_on;
  std::string gateway_vhost;         // encoded VirtualHost for gateway route configs
  std::string gateway_vhost_digest;  // ContentDigest(gateway_vhost), for their versions
  bool cors = false;
  bool uses_unroutable = false;  // some gRPC route points at kUnroutableCluster
  // Hashes of the domains it claims on gateways (its spec's) and from gRPC
  // clients (its listeners'), with its namespace and name: a scope whose
  // services' hashes are the same, in the same order, claims the same
  // domains (ClaimAllIfDisjoint), found without hashing every domain again.
  size_t gateway_claims = 0;
  size_t grpc_claims = 0;
  std::vector<std::pair<ObjectKey, FieldError>> warnings;  // replayed on reuse
  ResourcePtr grpc_routes;
  std::map<std::string, ResourcePtr> grpc_listeners;  // by domain
};

// Translated services by key.
using ServiceOutputs = std::map<ObjectKey, ServiceOutput>;

// The services one translation serves, in key order: each as the index
// holds it (its last accepted version when that is served) with its output.
// Walked by gateways and gRPC listeners instead of the ServiceOutputs map:
// a vector walk that meets the index's own pointers mostly compares no key.
using ServedServices = std::vector<std::pair<const GatewayObject*, const ServiceOutput*>>;

// The output of `vs` in `served`, walking forward from `cursor` (objects met
// in key order cost one pass); nullptr if `vs` is not served.
const ServiceOutput* FindServed(const ServedServices& served,
                                ServedServices::const_iterator& cursor, const GatewayObject& vs);

struct ServiceContext {
  const ObjectIndex* index;
  uint32_t missing_upstream_status;
  std::string route_tables_epoch;  // RouteTablesEpoch(*index)
};

// Translates one virtual service, delegation expanded. Fails, naming the
// Envoy field, when Envoy (or a gRPC client) would refuse what it becomes:
// its virtual host is shared with every other service of a gateway, so
// serving it would make proxies refuse all of them.
absl::StatusOr<ServiceOutput> TranslateVirtualService(const GatewayObject& vs,
                                                      const ServiceContext& context);

// The route tables as delegation sees them: their keys and contents.
std::string RouteTablesEpoch(const ObjectIndex& index);

// Identifies an upstream key in ServiceDependencies::upstreams. Two keys may
// share a hash: that only makes a service translate again needlessly.
size_t UpstreamRefHash(const std::string& ns, const std::string& name);

}  // namespace holdfast
