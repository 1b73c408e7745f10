#pragma once

#include <string>
#include <utility>
#include <vector>

#include "src/model/types.h"

namespace holdfast {

// Objects in key order (KeyLess), one per key: a translation's working set.
// A sorted array of pointers, not a map: built from scratch for every
// translation of 20,000 objects, a map cost an allocation and a copied key
// per object.
using SortedObjects = std::vector<const GatewayObject*>;

// Puts `object` in `sorted`, in place of the one with its key if any.
// Appending in key order costs one comparison.
void InsertOrAssign(SortedObjects& sorted, const GatewayObject* object);

// The objects of `kind` in `sorted`, as a range of it.
std::pair<SortedObjects::const_iterator, SortedObjects::const_iterator> RangeOfKind(
    const SortedObjects& sorted, const std::string& kind);
std::pair<SortedObjects::iterator, SortedObjects::iterator> RangeOfKind(SortedObjects& sorted,
                                                                        const std::string& kind);

// The objects a translation works from, indexed by kind for lookups and
// label selection. Iteration order is by key, so output is deterministic.
class ObjectIndex {
 public:
  ObjectIndex() = default;
  // `objects` must be in key order, one per key.
  explicit ObjectIndex(SortedObjects objects) : objects_(std::move(objects)) {}

  void Add(const GatewayObject* object) { InsertOrAssign(objects_, object); }

  const GatewayObject* Find(const std::string& kind, const ObjectRef& ref,
                            const std::string& referrer_ns) const;
  static constexpr size_t kNone = static_cast<size_t>(-1);
  // Where Find's object is in All(), or kNone. Tries `hint` first: looking
  // up names in key order finds each right after the one before, so a
  // gateway listing 10,000 services costs a comparison each, not a search.
  size_t PositionOf(const std::string& kind, const ObjectRef& ref, const std::string& referrer_ns,
                    size_t hint) const;
  // Objects of `kind` matching `selector`, evaluated from `referrer_ns`.
  std::vector<const GatewayObject*> Select(const std::string& kind, const Selector& selector,
                                           const std::string& referrer_ns) const;
  const SortedObjects& All() const { return objects_; }
  std::vector<const GatewayObject*> OfKind(const std::string& kind) const;

 private:
  SortedObjects objects_;
};

}  // namespace holdfast
