#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "src/snapshot/resource.h"

namespace holdfast {

// A digest of a set of resources' names and versions, kept as resources
// are added and removed one at a time: the sum of their entry digests
// (Resource::entry_digest), so equal sets sum equally in any order, and a
// change to one of 10,000 resources costs no walk over the others.
class VersionSum {
 public:
  void Add(const Resource& resource);
  void Remove(const Resource& resource);
  // 16 hex digits, as other versions.
  std::string Digest() const;

 private:
  std::array<uint64_t, 2> lanes_ = {};
};

// Resources of one type by name: sorted, so iteration is deterministic, and
// immutable once made.
//
// A sorted array rather than a tree: a snapshot makes one per changed type
// on every change (10,000 route configurations at fleet scale), and an
// array is one allocation with no name copied. Each entry's name refers to
// the name its resource holds, which lives as long as the entry does.
class ResourceMap {
 public:
  using value_type = std::pair<const std::string&, ResourcePtr>;
  using const_iterator = std::vector<value_type>::const_iterator;
  using iterator = const_iterator;

  ResourceMap() = default;
  // The map of `resources`, which may come in any order (in name order, as
  // the translator emits them, costs no sort). Fails, naming it, if two
  // share a name.
  static absl::StatusOr<ResourceMap> Of(std::vector<ResourcePtr> resources);

  // `resources` as a change to `before`: what both hold (the same object)
  // is taken from `before` without being read, which is what makes a change
  // to a few of 10,000 route configurations cheap.
  struct Patch;
  // `resources` may come in any order: in name order around what changed
  // (as most of the translator's do), the kept entries are found by walking
  // both; otherwise by pointer in a hash of before's, which reads no
  // resource either. nullopt if two share a name: Of then names them.
  static std::optional<Patch> Patched(const ResourceMap& before,
                                      const std::vector<ResourcePtr>& resources);

  const_iterator begin() const { return entries_.begin(); }
  const_iterator end() const { return entries_.end(); }
  size_t size() const { return entries_.size(); }
  bool empty() const { return entries_.empty(); }
  // The entry named `name`, or end().
  const_iterator find(absl::string_view name) const;
  bool contains(absl::string_view name) const { return find(name) != end(); }
  // VersionSum of the entries.
  const VersionSum& version_sum() const { return sum_; }

 private:
  // Patched's two ways. PatchInOrder starts after the first `same`
  // resources, the same objects as before's first entries; nullopt if
  // `resources` are out of name order.
  static std::optional<Patch> PatchInOrder(const ResourceMap& before,
                                           const std::vector<ResourcePtr>& resources, size_t same);
  static std::optional<Patch> PatchAnyOrder(const ResourceMap& before,
                                            const std::vector<ResourcePtr>& resources);

  std::vector<value_type> entries_;
  VersionSum sum_;
};

struct ResourceMap::Patch {
  ResourceMap map;  // not to be used when unchanged(): the map is `before`
  // Entries new to the map, or of another version than before, in name
  // order. A resource of the same name and version as before is not: the
  // map keeps the one before (the same content).
  std::vector<ResourcePtr> added;
  // Whether a name of `before` is gone: what referred to it may dangle.
  bool names_removed = false;
  bool unchanged() const { return added.empty() && !names_removed; }
};

}  // namespace holdfast
