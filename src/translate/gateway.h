#pragma once

#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/string_view.h"
#include "src/model/types.h"
#include "src/snapshot/resource.h"
#include "src/translate/object_index.h"
#include "src/translate/status.h"
#include "src/translate/virtual_service.h"

namespace holdfast {

// Which virtual service serves each domain of one scope. Only looked up,
// never walked (output order comes from the services), so hashed: a
// translation looks up and fills every served domain once.
using ScopeOwners = absl::flat_hash_map<std::string, ObjectKey>;
// The same by scope: a gateway's key, or "" for proxyless gRPC listeners.
using DomainOwners = absl::flat_hash_map<std::string, ScopeOwners>;

// Whether `vs` served one of its domains in `scope` in the last translation:
// on a conflict the incumbent keeps the domain, so adding a conflicting
// object never takes traffic away from a working one.
bool ServedBefore(const DomainOwners& owners, absl::string_view scope, const GatewayObject& vs);

// Fills `owners` with every domain `claims` name, each for its service, if
// no two claims share a domain: then all are served whatever the order, and
// who served a domain before need not be looked up (ServedBefore), which is
// the common case. Returns false, with `owners` emptied, if two do.
// `for_each_domain(claim, add)` calls `add(domain, vs)` for each of its domains.
template <typename Claims, typename ForEachDomain>
bool ClaimAllIfDisjoint(const Claims& claims, ForEachDomain for_each_domain, ScopeOwners& owners) {
  bool disjoint = true;
  for (const auto& claim : claims) {
    for_each_domain(claim, [&](const std::string& domain, const GatewayObject& vs) {
      disjoint = owners.emplace(domain, vs.key()).second && disjoint;
    });
    if (!disjoint) {
      owners.clear();
      return false;
    }
  }
  return true;
}

struct GatewayContext {
  const ObjectIndex* index;
  const ServiceOutputs* services;  // translated, servable services
  const DomainOwners* previous_owners;
};

// A gateway translated: its resources, the statuses it gives other objects
// (services that conflict on a domain) and the domains it serves.
struct GatewayOutput {
  std::vector<ResourcePtr> resources;  // RouteConfiguration, Listener
  StatusMap statuses;
  ScopeOwners owners;  // the domains this gateway serves
};

// Translates a gateway into a Listener and a RouteConfiguration assembled
// from its services' encoded virtual hosts (a change to one service
// re-encodes only its own). Returns why the gateway cannot be served, with
// its field, or nullopt.
std::optional<FieldError> TranslateGateway(const GatewayObject& gateway,
                                           const GatewayContext& context, GatewayOutput* out);

}  // namespace holdfast
