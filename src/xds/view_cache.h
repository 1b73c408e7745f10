#pragma once

#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "absl/base/call_once.h"
#include "absl/container/flat_hash_map.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "src/snapshot/snapshot.h"
#include "src/xds/name_set.h"

namespace holdfast {

// Resources chosen for a response, shared by every stream that is sent them.
struct ResourceList {
  std::vector<ResourcePtr> resources;  // sorted by name
  std::vector<std::string> removed;    // Changed() only: selected names that are gone
  std::string digest;                  // VersionOf(resources): identifies the body
};
using ResourceListPtr = std::shared_ptr<const ResourceList>;

// What a stream subscribes to: every resource of a type, or `names`.
struct Selection {
  bool wildcard = false;
  NameSetPtr names;  // ignored when wildcard
  bool Selects(absl::string_view name) const { return wildcard || names->contains(name); }
  // Interned name sets: equal sets are the same pointer.
  bool operator==(const Selection& other) const {
    return wildcard == other.wildcard && names == other.names;
  }
};

// Memoized views of snapshots, shared by all sessions of a server so that a
// push to N streams computes each distinct answer once instead of N times:
// streams that subscribe to the same names (one interned NameSet) and were
// brought up to the same snapshot get the very same ResourceList, and their
// responses the same encoded body. Thread-safe; a computation runs once
// while other streams asking for it wait.
//
// Entries hold their inputs weakly and go once a snapshot or name set is no
// longer used by any stream.
class ViewCache {
 public:
  NameSetPool& names() { return names_; }

  // The resources of `type` in `snapshot` that `selection` selects.
  ResourceListPtr Selected(const SnapshotPtr& snapshot, absl::string_view type,
                           const Selection& selection);
  // The resources of `type` in `to` that `selection` selects and whose
  // version differs from `from` (including ones `from` lacks), and in
  // `removed` the selected names `from` has and `to` lacks.
  ResourceListPtr Changed(const SnapshotPtr& from, const SnapshotPtr& to, absl::string_view type,
                          const Selection& selection);

  size_t size();

 private:
  using Key = std::tuple<const Snapshot*, const Snapshot*, const NameSet*, std::string>;
  struct Entry {
    // Inputs, held weakly; a null input (no `from`, a wildcard) never expires.
    std::weak_ptr<const Snapshot> from;
    std::weak_ptr<const Snapshot> to;
    std::weak_ptr<const NameSet> names;
    bool has_from = false;
    bool has_names = false;
    absl::once_flag once;
    ResourceListPtr list;
    bool Expired() const {
      return to.expired() || (has_from && from.expired()) || (has_names && names.expired());
    }
  };

  std::shared_ptr<Entry> Find(const SnapshotPtr& from, const SnapshotPtr& to,
                              absl::string_view type, const Selection& selection);

  NameSetPool names_;
  absl::Mutex mu_;
  absl::flat_hash_map<Key, std::shared_ptr<Entry>> entries_ ABSL_GUARDED_BY(mu_);
  size_t sweep_at_ ABSL_GUARDED_BY(mu_) = 256;
};

}  // namespace holdfast
