#include "src/snapshot/snapshot_cache.h"

namespace holdfast {

SnapshotCache::WatchHandle::~WatchHandle() { cache_->Unwatch(id_); }

SnapshotCache::SnapshotCache(std::string default_group) : default_group_(std::move(default_group)) {}

void SnapshotCache::Set(absl::string_view group, SnapshotPtr snapshot) {
  absl::MutexLock publish(&publish_mu_);
  std::vector<std::pair<std::shared_ptr<Watcher>, Published>> to_notify;
  {
    absl::MutexLock lock(&mu_);
    Published published{std::move(snapshot), ++sequence_};
    groups_[std::string(group)] = published;
    const bool is_default = group == default_group_;
    for (const auto& [id, registration] : watchers_) {
      // Watchers of groups without their own snapshot follow the default.
      if (registration.group == group ||
          (is_default && !groups_.contains(registration.group))) {
        to_notify.emplace_back(registration.watcher, published);
      }
    }
  }
  for (const auto& [watcher, published] : to_notify) (*watcher)(published);
}

void SnapshotCache::Remove(absl::string_view group) {
  if (group == default_group_) return;
  absl::MutexLock publish(&publish_mu_);
  std::vector<std::pair<std::shared_ptr<Watcher>, Published>> to_notify;
  {
    absl::MutexLock lock(&mu_);
    auto it = groups_.find(group);
    if (it == groups_.end()) return;
    groups_.erase(it);
    // Watchers compare sequences: what they see now is a new publication
    // to them, even if the default group's snapshot is older.
    Published now = CurrentLocked(group);
    if (now.snapshot == nullptr) return;
    now.sequence = ++sequence_;
    groups_[default_group_].sequence = now.sequence;
    for (const auto& [id, registration] : watchers_) {
      if (registration.group == group) to_notify.emplace_back(registration.watcher, now);
    }
  }
  for (const auto& [watcher, published] : to_notify) (*watcher)(published);
}

Published SnapshotCache::Current(absl::string_view group) const {
  absl::MutexLock lock(&mu_);
  return CurrentLocked(group);
}

Published SnapshotCache::CurrentLocked(absl::string_view group) const {
  auto it = groups_.find(group);
  if (it == groups_.end()) it = groups_.find(default_group_);
  return it == groups_.end() ? Published{} : it->second;
}

std::unique_ptr<SnapshotCache::WatchHandle> SnapshotCache::Watch(std::string group,
                                                                 Watcher watcher) {
  absl::MutexLock lock(&mu_);
  uint64_t id = next_watch_id_++;
  watchers_.emplace(id, Registration{std::move(group),
                                     std::make_shared<Watcher>(std::move(watcher))});
  return std::unique_ptr<WatchHandle>(new WatchHandle(this, id));
}

void SnapshotCache::Unwatch(uint64_t id) {
  // Taking publish_mu_ waits out a publication that may be calling this
  // watcher, so after Unwatch returns the watcher is never running.
  absl::MutexLock publish(&publish_mu_);
  absl::MutexLock lock(&mu_);
  watchers_.erase(id);
}

std::map<std::string, Published> SnapshotCache::All() const {
  absl::MutexLock lock(&mu_);
  return {groups_.begin(), groups_.end()};
}

}  // namespace holdfast
