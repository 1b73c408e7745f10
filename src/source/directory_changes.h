#pragma once

#include <optional>
#include <string>

#include "absl/container/flat_hash_set.h"

namespace holdfast {

// What a directory watch saw between two listings: whether anything changed,
// and which entries, when its events could name them all. A listing can then
// look at those entries alone instead of the whole tree (ConfirmedScanner).
struct DirectoryChanges {
  // Something under the directory changed since the last listing.
  bool any = false;
  // The full paths of the entries made, written, renamed or removed; nullopt
  // when a change cannot be told by entry (a directory made, moved or
  // removed, its permissions changed, events lost to a full queue).
  std::optional<absl::flat_hash_set<std::string>> paths{std::in_place};

  static DirectoryChanges Unnamed() { return {.any = true, .paths = std::nullopt}; }

  void Merge(DirectoryChanges other) {
    any = any || other.any;
    if (!paths.has_value() || !other.paths.has_value()) {
      paths.reset();
      return;
    }
    if (paths->empty()) {
      paths = std::move(other.paths);
      return;
    }
    paths->insert(other.paths->begin(), other.paths->end());
  }
};

}  // namespace holdfast
