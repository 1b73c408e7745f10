#include "src/snapshot/resource_map.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace holdfast {

absl::StatusOr<ResourceMap> ResourceMap::Of(std::vector<ResourcePtr> resources) {
  auto name_less = [](const ResourcePtr& a, const ResourcePtr& b) { return a->name() < b->name(); };
  auto not_ascending = [&](const ResourcePtr& a, const ResourcePtr& b) { return !name_less(a, b); };
  // Entries cannot be reordered (their names are references): the
  // resources are, when they come out of order.
  if (std::adjacent_find(resources.begin(), resources.end(), not_ascending) != resources.end()) {
    std::stable_sort(resources.begin(), resources.end(), name_less);
    auto twin = std::adjacent_find(resources.begin(), resources.end(), not_ascending);
    if (twin != resources.end()) {
      return absl::InvalidArgumentError(absl::StrCat("two resources of type ",
                                                     TypeNameOf((*twin)->type_url()),
                                                     " are named \"", (*twin)->name(), "\""));
    }
  }
  ResourceMap map;
  map.entries_.reserve(resources.size());
  for (ResourcePtr& resource : resources) {
    const std::string& name = resource->name();  // in the resource, which the entry keeps
    map.entries_.emplace_back(name, std::move(resource));
  }
  return map;
}

ResourceMap::const_iterator ResourceMap::find(absl::string_view name) const {
  auto it = std::lower_bound(entries_.begin(), entries_.end(), name,
                             [](const value_type& entry, absl::string_view wanted) {
                               return entry.first < wanted;
                             });
  return it != entries_.end() && it->first == name ? it : entries_.end();
}

}  // namespace holdfast
