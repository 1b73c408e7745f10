#pragma once

#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/string_view.h"
#include "src/model/types.h"
#include "src/snapshot/resource.h"
#include "src/translate/object_index.h"
#include "src/translate/status.h"
#include "src/translate/virtual_service.h"

namespace holdfast {

// Which virtual service serves each domain of one scope.
using ScopeOwners = std::map<std::string, ObjectKey, std::less<>>;
// The same by scope: a gateway's key, or "" for proxyless gRPC listeners.
using DomainOwners = std::map<std::string, ScopeOwners, std::less<>>;

// Whether `vs` served one of its domains in `scope` in the last translation:
// on a conflict the incumbent keeps the domain, so adding a conflicting
// object never takes traffic away from a working one.
bool ServedBefore(const DomainOwners& owners, absl::string_view scope, const GatewayObject& vs);

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
