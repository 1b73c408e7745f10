#include "src/snapshot/resource_map.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace holdfast {

void VersionSum::Add(const Resource& resource) {
  for (size_t i = 0; i < lanes_.size(); ++i) lanes_[i] += resource.entry_digest()[i];
}

void VersionSum::Remove(const Resource& resource) {
  for (size_t i = 0; i < lanes_.size(); ++i) lanes_[i] -= resource.entry_digest()[i];
}

std::string VersionSum::Digest() const {
  char bytes[sizeof(lanes_)];
  for (size_t i = 0; i < sizeof(bytes); ++i) {
    bytes[i] = static_cast<char>(lanes_[i / 8] >> (8 * (i % 8)));
  }
  return ContentDigest(absl::string_view(bytes, sizeof(bytes)));
}

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
    map.sum_.Add(*resource);
    map.entries_.emplace_back(name, std::move(resource));
  }
  return map;
}

std::optional<ResourceMap::Patch> ResourceMap::Patched(const ResourceMap& before,
                                                       const std::vector<ResourcePtr>& resources) {
  Patch patch;
  // Most types of a snapshot do not change: found by comparing pointers,
  // before any entry is copied.
  auto [same_end, old] =
      std::mismatch(resources.begin(), resources.end(), before.begin(), before.end(),
                    [](const ResourcePtr& resource, const value_type& entry) {
                      return resource == entry.second;
                    });
  if (same_end == resources.end() && old == before.end()) return patch;  // map left empty
  ResourceMap& map = patch.map;
  map.entries_.reserve(resources.size());
  for (auto kept = before.begin(); kept != old; ++kept) map.entries_.push_back(*kept);
  map.sum_ = before.sum_;
  auto drop = [&] { map.sum_.Remove(*old++->second); };
  for (size_t i = same_end - resources.begin(); i < resources.size(); ++i) {
    const ResourcePtr& resource = resources[i];
    if (old != before.end() && old->second == resource) {  // the usual case: nothing read
      map.entries_.push_back(*old++);
      continue;
    }
    while (old != before.end() && old->first < resource->name()) {
      drop();
      patch.names_removed = true;
    }
    if (old != before.end() && old->first == resource->name()) {
      if (old->second->version() == resource->version()) {
        map.entries_.push_back(*old++);
        continue;
      }
      drop();
    }
    // What was kept is in before's order, and follows an added resource
    // only if named after it: the whole is in order if each added one is
    // named after the resource before it.
    if (i > 0 && !(resources[i - 1]->name() < resource->name())) return std::nullopt;
    map.sum_.Add(*resource);
    map.entries_.emplace_back(resource->name(), resource);
    patch.added.push_back(resource);
  }
  if (old != before.end()) patch.names_removed = true;
  while (old != before.end()) drop();
  return patch;
}

ResourceMap::const_iterator ResourceMap::find(absl::string_view name) const {
  auto it = std::lower_bound(entries_.begin(), entries_.end(), name,
                             [](const value_type& entry, absl::string_view wanted) {
                               return entry.first < wanted;
                             });
  return it != entries_.end() && it->first == name ? it : entries_.end();
}

}  // namespace holdfast
