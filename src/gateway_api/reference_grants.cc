#include "src/gateway_api/reference_grants.h"

namespace holdfast::gateway_api {

bool ReferenceGrants::Permits(const ReferenceFrom& from, const ReferenceTo& to) const {
  if (from.ns == to.ns) return true;
  for (const ReferenceGrant& grant : grants_) {
    if (grant.meta.ns != to.ns) continue;
    bool from_ok = false;
    for (const ReferenceGrant::From& f : grant.from) {
      from_ok |= f.group == from.group && f.kind == from.kind && f.ns == from.ns;
    }
    if (!from_ok) continue;
    for (const ReferenceGrant::To& t : grant.to) {
      if (t.group == to.group && t.kind == to.kind && (t.name.empty() || t.name == to.name)) {
        return true;
      }
    }
  }
  return false;
}

}  // namespace holdfast::gateway_api
