#pragma once

#include <map>
#include <vector>

#include "src/model/types.h"

namespace holdfast {

// The objects a translation works from, indexed by kind for lookups and
// label selection. Iteration order is by key, so output is deterministic.
class ObjectIndex {
 public:
  void Add(const GatewayObject* object);

  const GatewayObject* Find(const std::string& kind, const ObjectRef& ref,
                            const std::string& referrer_ns) const;
  // Objects of `kind` matching `selector`, evaluated from `referrer_ns`.
  std::vector<const GatewayObject*> Select(const std::string& kind, const Selector& selector,
                                           const std::string& referrer_ns) const;
  const std::map<ObjectKey, const GatewayObject*>& All() const { return objects_; }
  std::vector<const GatewayObject*> OfKind(const std::string& kind) const;

 private:
  std::map<ObjectKey, const GatewayObject*> objects_;
};

}  // namespace holdfast
