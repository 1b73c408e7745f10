#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/hash/hash.h"
#include "absl/strings/string_view.h"
#include "src/model/types.h"
#include "src/snapshot/resource.h"
#include "src/translate/object_index.h"
#include "src/translate/status.h"
#include "src/translate/virtual_service.h"

namespace holdfast {

// Which virtual service serves each domain of one scope. Only looked up,
// never walked (output order comes from the services), so hashed.
struct ScopeOwners {
  using Map = absl::flat_hash_map<std::string, ObjectKey>;
  // Never changed once filled: the next translation shares it if its
  // claims are the same.
  std::shared_ptr<Map> by_domain = std::make_shared<Map>();
  // A hash of the claims it was made from, in order, and whether no two
  // shared a domain: then the same claims make the same owners, and the
  // next translation keeps this map instead of filling one again (a
  // translation touches a few services; every domain would be copied).
  size_t claims_fingerprint = 0;
  bool disjoint = false;
};
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
// `previous` (or null) is the scope's owners from the last translation: if
// it was made from the same claims, `owners` shares its map.
// `for_each_domain(claim, add)` calls `add(domain, vs)` for each of its
// domains; `claim_hash(claim)` is a hash of those domains and the service's
// namespace and name (ServiceOutput's gateway_claims or grpc_claims).
template <typename Claims, typename ForEachDomain, typename ClaimHash>
bool ClaimAllIfDisjoint(const Claims& claims, ForEachDomain for_each_domain, ClaimHash claim_hash,
                        const ScopeOwners* previous, ScopeOwners& owners) {
  size_t fingerprint = claims.size();
  for (const auto& claim : claims) fingerprint = absl::HashOf(fingerprint, claim_hash(claim));
  if (previous != nullptr && previous->disjoint && previous->claims_fingerprint == fingerprint) {
    owners = *previous;
    return true;
  }
  owners.claims_fingerprint = fingerprint;
  owners.disjoint = true;
  owners.by_domain = std::make_shared<ScopeOwners::Map>();
  owners.by_domain->reserve(claims.size());  // a domain or more each
  for (const auto& claim : claims) {
    for_each_domain(claim, [&](const std::string& domain, const GatewayObject& vs) {
      owners.disjoint = owners.by_domain->emplace(domain, vs.key()).second && owners.disjoint;
    });
    if (!owners.disjoint) {
      owners.by_domain->clear();
      return false;
    }
  }
  return true;
}

// Resources of the last translation by EqualResourceKey, each kept as the
// object made first while its content stays the same: a snapshot finds an
// unchanged resource by its pointer, without reading it.
using ResourcesMadeBefore = absl::flat_hash_map<std::string, ResourcePtr>;
std::string EqualResourceKey(absl::string_view type_url, absl::string_view name);
// The one of `before` with resource's type, name and version, or resource.
ResourcePtr SameAsBefore(const ResourcesMadeBefore& before, ResourcePtr resource);

struct GatewayContext {
  const ObjectIndex* index;
  const ServedServices* services;  // translated, servable services
  const DomainOwners* previous_owners;
  // The gateways' resources of the last translation. A route configuration
  // whose version (made from its hosts' digests) is the same is taken from
  // here without its megabytes being assembled again.
  const ResourcesMadeBefore* made_before;
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
