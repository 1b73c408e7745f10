#include "src/translate/object_index.h"

#include <algorithm>
#include <tuple>

namespace holdfast {
namespace {

using KeyView = std::tuple<const std::string&, const std::string&, const std::string&>;

KeyView ViewOf(const GatewayObject& object) {
  return {object.kind(), object.meta.ns, object.meta.name};
}

// Orders objects against keys (and kinds alone, for ranges).
struct ByKey {
  bool operator()(const GatewayObject* object, const KeyView& key) const {
    return ViewOf(*object) < key;
  }
  bool operator()(const KeyView& key, const GatewayObject* object) const {
    return key < ViewOf(*object);
  }
  bool operator()(const GatewayObject* object, const std::string& kind) const {
    return object->kind() < kind;
  }
  bool operator()(const std::string& kind, const GatewayObject* object) const {
    return kind < object->kind();
  }
};

}  // namespace

void InsertOrAssign(SortedObjects& sorted, const GatewayObject* object) {
  if (sorted.empty() || KeyLess(*sorted.back(), *object)) {
    sorted.push_back(object);
    return;
  }
  auto at = std::lower_bound(sorted.begin(), sorted.end(), ViewOf(*object), ByKey());
  if (at != sorted.end() && !KeyLess(*object, **at)) {
    *at = object;  // the same key
  } else {
    sorted.insert(at, object);
  }
}

std::pair<SortedObjects::const_iterator, SortedObjects::const_iterator> RangeOfKind(
    const SortedObjects& sorted, const std::string& kind) {
  return std::equal_range(sorted.begin(), sorted.end(), kind, ByKey());
}

std::pair<SortedObjects::iterator, SortedObjects::iterator> RangeOfKind(SortedObjects& sorted,
                                                                        const std::string& kind) {
  return std::equal_range(sorted.begin(), sorted.end(), kind, ByKey());
}

const GatewayObject* ObjectIndex::Find(const std::string& kind, const ObjectRef& ref,
                                       const std::string& referrer_ns) const {
  const size_t at = PositionOf(kind, ref, referrer_ns, kNone);
  return at == kNone ? nullptr : objects_[at];
}

size_t ObjectIndex::PositionOf(const std::string& kind, const ObjectRef& ref,
                               const std::string& referrer_ns, size_t hint) const {
  const KeyView key{kind, ref.ns.empty() ? referrer_ns : ref.ns, ref.name};
  // Names first: they tell most objects apart in one comparison.
  auto is_key = [&](const GatewayObject& object) {
    return object.meta.name == ref.name && ViewOf(object) == key;
  };
  if (hint < objects_.size() && is_key(*objects_[hint])) return hint;
  auto it = std::lower_bound(objects_.begin(), objects_.end(), key, ByKey());
  return it != objects_.end() && is_key(**it) ? it - objects_.begin() : kNone;
}

std::vector<const GatewayObject*> ObjectIndex::Select(const std::string& kind,
                                                      const Selector& selector,
                                                      const std::string& referrer_ns) const {
  std::vector<const GatewayObject*> out;
  auto [begin, end] = RangeOfKind(objects_, kind);
  for (auto it = begin; it != end; ++it) {
    const GatewayObject& object = **it;
    const std::string& ns = object.meta.ns;
    bool ns_ok = selector.all_namespaces ||
                 (selector.namespaces.empty()
                      ? ns == referrer_ns
                      : std::find(selector.namespaces.begin(), selector.namespaces.end(), ns) !=
                            selector.namespaces.end());
    if (!ns_ok) continue;
    bool labels_ok = true;
    for (const auto& [key, value] : selector.labels) {
      auto label = object.meta.labels.find(key);
      if (label == object.meta.labels.end() || label->second != value) {
        labels_ok = false;
        break;
      }
    }
    if (labels_ok) out.push_back(&object);
  }
  return out;
}

std::vector<const GatewayObject*> ObjectIndex::OfKind(const std::string& kind) const {
  auto [begin, end] = RangeOfKind(objects_, kind);
  return {begin, end};
}

}  // namespace holdfast
