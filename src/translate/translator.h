#pragma once

#include <map>
#include <vector>

#include "src/model/types.h"
#include "src/snapshot/resource.h"
#include "src/snapshot/rollout_policy.h"
#include "src/translate/gateway.h"
#include "src/translate/status.h"
#include "src/translate/virtual_service.h"

namespace holdfast {

struct TranslatorOptions {
  // Status code of routes whose upstream (or route table) does not exist.
  uint32_t missing_upstream_status = 503;
  // Also serve every virtual service to proxyless gRPC clients: an API
  // listener per domain and a route configuration per virtual service.
  bool grpc_listeners = true;
  // Threads that translate virtual services when many must be translated
  // (at start, or when a route table many delegate to changes), and that
  // sources decode many files on; 0: one per core this process may use
  // (UsableCores). A change to a few runs on the caller's thread alone.
  int threads = 0;
};

struct TranslationInput {
  // Objects that decoded without errors.
  std::map<ObjectKey, GatewayObject> objects;
  // Objects present in the source that failed to decode, with why.
  std::map<ObjectKey, std::vector<FieldError>> invalid;
  // Services discovered by the Kubernetes source, for upstreams that name one.
  DiscoveredServices services;
};

struct TranslationOutput {
  std::vector<ResourcePtr> resources;  // a consistent set, ready for Snapshot::Build
  StatusMap statuses;
  ConfiguredRollouts rollouts;  // from RolloutPolicy objects, for Snapshot::Build
};

// Translates gateway objects into Envoy resources:
//   Gateway        -> Listener (HTTP connection manager over RDS, router) and
//                     RouteConfiguration (a virtual host per virtual service)
//   VirtualService -> virtual host with its routes (delegation expanded), and
//                     for gRPC clients an API listener per domain and a
//                     RouteConfiguration of its own
//   Upstream       -> Cluster and ClusterLoadAssignment
//   RolloutPolicy  -> a rollout policy the snapshot carries (no resource)
//
// Output is deterministic: the same objects give byte-identical resources,
// whose versions are content digests, so an object change touches only the
// resources it feeds. An object that fails to decode, or that Envoy would
// refuse once translated, keeps its last accepted version in service (its
// status says Rejected, serving last good); broken
// references never remove neighbours: routes to missing upstreams answer
// with `missing_upstream_status`. When virtual services conflict on a
// domain, the one that served it before keeps it (else the first by key).
class Translator {
 public:
  explicit Translator(TranslatorOptions options = {}) : options_(options) {}

  TranslationOutput Translate(const TranslationInput& input);

  // Gives back the statuses of an earlier output once no one reads them:
  // the next translation fills their entries in place instead of
  // allocating (and later freeing) one per object on every change.
  void Recycle(StatusMap statuses) { spare_statuses_ = std::move(statuses); }

 private:
  struct UpstreamOutput {
    std::string digest;
    // The Service it names as it was translated (nullopt: none, or absent).
    std::optional<DiscoveredService> service;
    std::vector<ResourcePtr> resources;
    std::vector<FieldError> warnings;
    std::optional<FieldError> error;  // why Envoy would refuse it
  };
  // One translation's working state, passed from phase to phase.
  struct Pass;

  // The phases of a translation, in order.
  void CollectEffective(const TranslationInput& input, Pass& pass);
  void TranslateUpstreams(Pass& pass);
  void TranslateServices(Pass& pass);
  void TranslateGateways(Pass& pass);
  void AddGrpcListeners(Pass& pass);
  // Remembers the `candidates` (input objects new or changed since last
  // accepted, with their statuses) that were accepted.
  void RememberAccepted(
      const std::vector<std::pair<const GatewayObject*, const ObjectStatus*>>& candidates);

  using UpstreamCache = std::map<ObjectKey, UpstreamOutput>;
  // Whether `cached` is the translation of `upstream` naming `service`.
  static bool StillCurrent(const UpstreamOutput& cached, const GatewayObject& upstream,
                           const DiscoveredService* service);
  // Adds a translated upstream's resources and warnings to `pass`.
  static void Serve(const UpstreamOutput& upstream, ObjectStatus& status, Pass& pass);
  // `cached` is the upstream's entry in upstream_cache_, or its end.
  UpstreamOutput UpstreamFor(const GatewayObject& upstream, UpstreamCache::iterator cached,
                             const DiscoveredServices& services);
  // `cached` is vs's entry in service_cache_, or its end.
  absl::StatusOr<ServiceOutput> ServiceFor(const GatewayObject& vs,
                                           ServiceOutputs::iterator cached, const Pass& pass);
  // Translations of the `services` whose cached one (in `cached`, or its
  // end) no longer holds, with their positions, in order.
  std::vector<std::pair<size_t, absl::StatusOr<ServiceOutput>>> TranslateStale(
      const std::vector<const GatewayObject*>& services,
      const std::vector<ServiceOutputs::iterator>& cached, const Pass& pass);
  // What a virtual service is translated against in `pass`.
  ServiceContext ServiceContextOf(const Pass& pass) const;
  // Whether `cached`, a translation of vs's key, still holds for vs in `pass`.
  static bool StillCurrent(const ServiceOutput& cached, const GatewayObject& vs, const Pass& pass);
  // The last accepted version of `object`, if it differs from it.
  const GatewayObject* LastGood(const GatewayObject& object) const;

  using LastAccepted = std::map<ObjectKey, GatewayObject>;
  // Takes every input object as in effect, starts its status (reusing
  // spare_statuses_' entries),
  // lists in `pass` the objects to remember if accepted, and forgets the
  // remembered objects gone from the source (invalid ones keep theirs).
  void StartInput(const TranslationInput& input, Pass& pass);
  // The entry of `statuses` for `key`, reset (or made), at or after `at`;
  // the entries before it are erased.
  static StatusMap::iterator StatusAt(StatusMap& statuses, StatusMap::iterator at,
                                      const ObjectKey& key);
  // Forgets the remembered objects from `at` on, before `key` (all if
  // none), that are not `invalid`; returns where it stopped.
  LastAccepted::iterator ForgetGoneBefore(
      LastAccepted::iterator at, const ObjectKey* key,
      const std::map<ObjectKey, std::vector<FieldError>>& invalid);

  TranslatorOptions options_;
  StatusMap spare_statuses_;  // from Recycle
  size_t resources_before_ = 0;  // how many the last translation output
  ServiceOutputs service_cache_;
  LastAccepted last_accepted_;
  UpstreamCache upstream_cache_;
  std::vector<ObjectKey> upstreams_indexed_;  // the last index's upstreams, in key order
  // Who served each domain last time: on a conflict the incumbent keeps it.
  DomainOwners domain_owners_;
  // The resources made anew by every translation (gateways', the
  // unroutable cluster's) as last made: one made equal again is replaced
  // by the one before (SameAsBefore).
  ResourcesMadeBefore made_before_;
};

}  // namespace holdfast
