#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include "absl/strings/string_view.h"
#include <vector>

#include "absl/synchronization/mutex.h"
#include "src/snapshot/snapshot.h"

namespace holdfast {

// A snapshot as published to one group, with the cache-wide sequence number
// of its publication (higher is newer).
struct Published {
  SnapshotPtr snapshot;
  uint64_t sequence = 0;
};

// Holds the current snapshot of every node group and tells watchers when the
// snapshot their group sees changes.
//
// A group with no snapshot of its own sees the default group's. Watchers are
// called on the publishing thread, without the cache's lock held, one
// publication at a time; a watcher may receive a publication it has already
// seen through Current(), so it should ignore sequences it has passed.
class SnapshotCache {
 public:
  using Watcher = std::function<void(const Published&)>;

  // Unregisters its watcher when destroyed; after that the watcher is never
  // called again.
  class WatchHandle {
   public:
    ~WatchHandle();
    WatchHandle(const WatchHandle&) = delete;
    WatchHandle& operator=(const WatchHandle&) = delete;

   private:
    friend class SnapshotCache;
    WatchHandle(SnapshotCache* cache, uint64_t id) : cache_(cache), id_(id) {}
    SnapshotCache* cache_;
    uint64_t id_;
  };

  explicit SnapshotCache(std::string default_group = "default");

  // Publishes `snapshot` as the current snapshot of `group`.
  void Set(absl::string_view group, SnapshotPtr snapshot);
  // Drops `group`'s own snapshot: from now on it sees the default group's,
  // and its watchers are told so. Not for the default group.
  void Remove(absl::string_view group);
  // What `group` currently sees (its own snapshot, else the default group's);
  // a null snapshot if neither exists.
  Published Current(absl::string_view group) const;
  // Watches what `group` sees. Call Current() after registering.
  std::unique_ptr<WatchHandle> Watch(std::string group, Watcher watcher);
  // Every group with its own snapshot.
  std::map<std::string, Published> All() const;
  const std::string& default_group() const { return default_group_; }

 private:
  struct Registration {
    std::string group;
    std::shared_ptr<Watcher> watcher;
  };
  void Unwatch(uint64_t id);
  Published CurrentLocked(absl::string_view group) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const std::string default_group_;
  // Serializes publications so each watcher sees them in order.
  absl::Mutex publish_mu_ ABSL_ACQUIRED_BEFORE(mu_);
  mutable absl::Mutex mu_;
  std::map<std::string, Published, std::less<>> groups_ ABSL_GUARDED_BY(mu_);
  std::map<uint64_t, Registration> watchers_ ABSL_GUARDED_BY(mu_);
  uint64_t next_watch_id_ ABSL_GUARDED_BY(mu_) = 1;
  uint64_t sequence_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace holdfast
