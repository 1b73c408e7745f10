#include "src/translate/object_index.h"

#include <algorithm>

namespace holdfast {

void ObjectIndex::Add(const GatewayObject* object) {
  // Objects mostly come in key order: the end is then the right hint.
  objects_.insert_or_assign(objects_.end(), object->key(), object);
}

const GatewayObject* ObjectIndex::Find(const std::string& kind, const ObjectRef& ref,
                                       const std::string& referrer_ns) const {
  auto it = objects_.find({kind, ref.ns.empty() ? referrer_ns : ref.ns, ref.name});
  return it == objects_.end() ? nullptr : it->second;
}

std::vector<const GatewayObject*> ObjectIndex::Select(const std::string& kind,
                                                      const Selector& selector,
                                                      const std::string& referrer_ns) const {
  std::vector<const GatewayObject*> out;
  auto begin = objects_.lower_bound({kind, "", ""});
  for (auto it = begin; it != objects_.end() && it->first.kind == kind; ++it) {
    const GatewayObject& object = *it->second;
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
  std::vector<const GatewayObject*> out;
  for (auto it = objects_.lower_bound({kind, "", ""}); it != objects_.end() && it->first.kind == kind;
       ++it) {
    out.push_back(it->second);
  }
  return out;
}

}  // namespace holdfast
