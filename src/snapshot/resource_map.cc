#include "src/snapshot/resource_map.h"

#include <algorithm>

#include "absl/container/flat_hash_map.h"
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
  // Most types of a snapshot do not change: found by comparing pointers,
  // before any entry is copied.
  auto [same_end, old] =
      std::mismatch(resources.begin(), resources.end(), before.begin(), before.end(),
                    [](const ResourcePtr& resource, const value_type& entry) {
                      return resource == entry.second;
                    });
  if (same_end == resources.end() && old == before.end()) return Patch();
  if (auto patch = PatchInOrder(before, resources, same_end - resources.begin())) return patch;
  return PatchAnyOrder(before, resources);
}

std::optional<ResourceMap::Patch> ResourceMap::PatchInOrder(
    const ResourceMap& before, const std::vector<ResourcePtr>& resources, size_t same) {
  Patch patch;
  ResourceMap& map = patch.map;
  map.entries_.reserve(resources.size());
  for (size_t j = 0; j < same; ++j) map.entries_.push_back(before.entries_[j]);
  map.sum_ = before.sum_;
  auto old = before.begin() + same;
  auto drop = [&] { map.sum_.Remove(*old++->second); };
  for (size_t i = same; i < resources.size(); ++i) {
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

std::optional<ResourceMap::Patch> ResourceMap::PatchAnyOrder(
    const ResourceMap& before, const std::vector<ResourcePtr>& resources) {
  absl::flat_hash_map<const Resource*, size_t> position;  // of before's entries
  position.reserve(before.size());
  for (size_t j = 0; j < before.size(); ++j) position.emplace(before.entries_[j].second.get(), j);
  std::vector<bool> kept(before.size()), replaced(before.size());
  std::vector<ResourcePtr> others;
  for (const ResourcePtr& resource : resources) {
    auto found = position.find(resource.get());
    if (found != position.end() && !kept[found->second]) {
      kept[found->second] = true;
    } else {
      others.push_back(resource);
    }
  }
  std::sort(others.begin(), others.end(),
            [](const ResourcePtr& a, const ResourcePtr& b) { return a->name() < b->name(); });
  // Where each other one goes among before's entries (in name order, so
  // the places ascend), or which one it replaces.
  std::vector<std::pair<size_t, ResourcePtr>> placed;
  for (size_t k = 0; k < others.size(); ++k) {
    const ResourcePtr& resource = others[k];
    if (k > 0 && !(others[k - 1]->name() < resource->name())) return std::nullopt;  // twins
    const size_t at = std::lower_bound(before.begin(), before.end(), resource->name(),
                                       [](const value_type& entry, const std::string& name) {
                                         return entry.first < name;
                                       }) -
                      before.begin();
    if (at < before.size() && before.entries_[at].first == resource->name()) {
      if (kept[at]) return std::nullopt;  // twins
      if (before.entries_[at].second->version() == resource->version()) {
        kept[at] = true;  // the same content: before's is kept
        continue;
      }
      replaced[at] = true;
    }
    placed.emplace_back(at, resource);
  }
  Patch patch;
  ResourceMap& map = patch.map;
  map.entries_.reserve(resources.size());
  map.sum_ = before.sum_;
  auto next = placed.begin();
  for (size_t j = 0; j <= before.size(); ++j) {
    for (; next != placed.end() && next->first == j; ++next) {  // named before entry j
      map.sum_.Add(*next->second);
      map.entries_.emplace_back(next->second->name(), next->second);
      patch.added.push_back(next->second);
    }
    if (j == before.size()) break;
    if (kept[j]) {
      map.entries_.push_back(before.entries_[j]);
      continue;
    }
    map.sum_.Remove(*before.entries_[j].second);
    patch.names_removed = patch.names_removed || !replaced[j];
  }
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
