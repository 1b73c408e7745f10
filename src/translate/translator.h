#pragma once

#include <map>
#include <vector>

#include "src/model/types.h"
#include "src/snapshot/resource.h"
#include "src/translate/status.h"

namespace holdfast {

struct TranslatorOptions {
  // Status code of routes whose upstream (or route table) does not exist.
  uint32_t missing_upstream_status = 503;
  // Also serve every virtual service to proxyless gRPC clients: an API
  // listener per domain and a route configuration per virtual service.
  bool grpc_listeners = true;
};

struct TranslationInput {
  // Objects that decoded without errors.
  std::map<ObjectKey, GatewayObject> objects;
  // Objects present in the source that failed to decode, with why.
  std::map<ObjectKey, std::vector<FieldError>> invalid;
};

struct TranslationOutput {
  std::vector<ResourcePtr> resources;  // a consistent set, ready for Snapshot::Build
  StatusMap statuses;
};

// Translates gateway objects into Envoy resources:
//   Gateway        -> Listener (HTTP connection manager over RDS, router) and
//                     RouteConfiguration (a virtual host per virtual service)
//   VirtualService -> virtual host with its routes (delegation expanded), and
//                     for gRPC clients an API listener per domain and a
//                     RouteConfiguration of its own
//   Upstream       -> Cluster and ClusterLoadAssignment
//
// Output is deterministic: the same objects give byte-identical resources,
// whose versions are content digests, so an object change touches only the
// resources it feeds. An object that fails to decode keeps its last accepted
// version in service (its status says Rejected, serving last good); broken
// references never remove neighbours: routes to missing upstreams answer
// with `missing_upstream_status`. When virtual services conflict on a
// domain, the one that served it before keeps it (else the first by key).
class Translator {
 public:
  explicit Translator(TranslatorOptions options = {}) : options_(options) {}

  TranslationOutput Translate(const TranslationInput& input);

 private:
  struct UpstreamOutput {
    std::string digest;
    std::vector<ResourcePtr> resources;
    std::vector<FieldError> warnings;
  };

  // A virtual service translated: reused while `digest` and `epoch` hold.
  struct ServiceOutput {
    std::string digest;
    std::string epoch;
    std::string gateway_vhost;  // encoded VirtualHost for gateway route configs
    bool cors = false;
    bool uses_unroutable = false;  // some gRPC route points at kUnroutableCluster
    std::vector<std::pair<ObjectKey, FieldError>> warnings;  // replayed on reuse
    ResourcePtr grpc_routes;
    std::map<std::string, ResourcePtr> grpc_listeners;  // by domain
  };

  TranslatorOptions options_;
  std::map<ObjectKey, ServiceOutput> service_cache_;
  std::map<ObjectKey, GatewayObject> last_accepted_;
  std::map<ObjectKey, UpstreamOutput> upstream_cache_;
  // Who served each domain last time, per gateway ("" for gRPC listeners):
  // on a conflict the incumbent keeps the domain, so adding a conflicting
  // object never takes traffic away from a working one.
  std::map<std::pair<std::string, std::string>, ObjectKey> domain_owners_;
};

}  // namespace holdfast
