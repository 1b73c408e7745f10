#pragma once
// ReferenceGrant: a reference from one namespace to an object in another
// (a route's backendRef to a Service, a Gateway's certificateRef to a
// Secret) is allowed only when a ReferenceGrant in the target's namespace
// says so.

#include <string>
#include <vector>

#include "src/gateway_api/objects.h"

namespace holdfast::gateway_api {

struct ReferenceFrom {
  std::string group;  // of the referring object: gateway.networking.k8s.io
  std::string kind;   // Gateway, HTTPRoute, GRPCRoute
  std::string ns;
};
struct ReferenceTo {
  std::string group;  // "" for core
  std::string kind;   // Service, Secret
  std::string ns;
  std::string name;
};

class ReferenceGrants {
 public:
  explicit ReferenceGrants(const std::vector<ReferenceGrant>& grants) : grants_(grants) {}
  // Same-namespace references are always allowed.
  bool Permits(const ReferenceFrom& from, const ReferenceTo& to) const;

 private:
  const std::vector<ReferenceGrant>& grants_;
};

}  // namespace holdfast::gateway_api
