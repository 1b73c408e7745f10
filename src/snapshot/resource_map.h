#pragma once

#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "src/snapshot/resource.h"

namespace holdfast {

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

  const_iterator begin() const { return entries_.begin(); }
  const_iterator end() const { return entries_.end(); }
  size_t size() const { return entries_.size(); }
  bool empty() const { return entries_.empty(); }
  // The entry named `name`, or end().
  const_iterator find(absl::string_view name) const;
  bool contains(absl::string_view name) const { return find(name) != end(); }

 private:
  std::vector<value_type> entries_;
};

}  // namespace holdfast
